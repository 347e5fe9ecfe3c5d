"""PyTorch-vs-reference conformance harness."""
