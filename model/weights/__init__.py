"""The trained weights gryphone ships, their manifest and model card (model/shipped.py reads them)."""
