"""Runnable example app for fmconstructs (``cdk.json`` runs ``examples/app.py``)."""
