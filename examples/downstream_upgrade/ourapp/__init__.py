"""A downstream project of sglang, written against 0.5.16."""
