"""What leaves for the model: the data policies (full, schema_only, redact), enforced where requests leave."""
