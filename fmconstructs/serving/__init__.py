"""Serving foundation models on the training platform's EKS clusters (issue 23)."""
