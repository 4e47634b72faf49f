"""Evaluation: retrieval quality on question sets (`eval`: scoring a collection, comparing
strategies), the question sets themselves (`questions`), the measures (`metrics`) and the
peer chunkers it compares against (`peers`)."""
