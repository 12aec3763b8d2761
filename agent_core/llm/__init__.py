"""The model endpoint: the openai SDK adapter, its streamed replies, prompt tool calling, the connection check."""
