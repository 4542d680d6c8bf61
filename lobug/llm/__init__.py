"""Model clients (Ollama and OpenAI-compatible chat, embedders), reply parsing."""
