"""Evaluation: retrieval quality on question sets (`eval`) and the peer chunkers it compares
against (`peers`)."""
