"""Speech-to-text: audio decoding, the Transcriber interface, faster-whisper and the service."""

from lobug.speech.audio import decode_audio, rms_dbfs
from lobug.speech.service import SpeechService
from lobug.speech.transcriber import SpeechUnavailable, Transcriber, Transcript
from lobug.speech.whisper import WhisperTranscriber

__all__ = [
    "SpeechService",
    "SpeechUnavailable",
    "Transcriber",
    "Transcript",
    "WhisperTranscriber",
    "decode_audio",
    "rms_dbfs",
]
