"""What the server reads from a notebook's kernel without running user code: namespace, @tool functions, usage."""
