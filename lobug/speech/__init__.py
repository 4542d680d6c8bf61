"""Speech-to-text: audio decoding, the Transcriber interface, faster-whisper and the service."""
