"""Model clients: Ollama chat, embedders, reply parsing."""
