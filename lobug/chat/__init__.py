"""Conversation: sessions, working memory, sensors, prompt assembly and the turn itself."""
