"""The `info` answer to `describe`: an `asr` program (the Whisper model) and a `handle` program
(the memory-keeping conversation agent)."""

from __future__ import annotations

from pathlib import PurePath

from wyoming.info import AsrModel, AsrProgram, Attribution, HandleModel, HandleProgram, Info

from lobug import __version__
from lobug.config import Config
from lobug.config.redaction import redact_url

PROGRAM = "lobug"
LOBUG = Attribution(name="Lo-Bug", url="")  # self-hosted: no public home page to name
WHISPER = Attribution(
    name="OpenAI Whisper (faster-whisper)", url="https://github.com/SYSTRAN/faster-whisper"
)
OLLAMA = Attribution(name="Ollama", url="https://ollama.com")
# faster_whisper.tokenizer._LANGUAGE_CODES, copied: describe must not import the model library
# on the event loop (it pulls in ctranslate2 and tokenizers), and the name is private there.
WHISPER_LANGUAGES = (
    "af am ar as az ba be bg bn bo br bs ca cs cy da de el en es et eu fa fi fo fr gl gu ha haw"
    " he hi hr ht hu hy id is it ja jw ka kk km kn ko la lb ln lo lt lv mg mi mk ml mn mr ms mt"
    " my ne nl nn no oc pa pl ps pt ro ru sa sd si sk sl sn so sq sr su sv sw ta te tg th tk tl"
    " tr tt uk ur uz vi yi yo zh yue"
).split()


def asr_languages(config: Config) -> list[str]:
    """What the model transcribes: the configured language, English for a `.en` model, or
    every Whisper language (Home Assistant offers the STT only for languages listed here)."""
    if config.speech.language:
        return [config.speech.language]
    if PurePath(config.speech.model).name.endswith(".en"):
        return ["en"]
    return list(WHISPER_LANGUAGES)


def describe(config: Config, *, speech_ready: bool) -> Info:
    speech_model = AsrModel(
        name=PurePath(config.speech.model).name,
        attribution=WHISPER,
        installed=speech_ready,
        description=f"faster-whisper {config.speech.model} ({config.speech.compute_type})",
        version=None,
        languages=asr_languages(config),
    )
    openai = config.llm.backend == "openai"  # any server of the OpenAI chat API
    agent = HandleModel(
        name=(config.llm.chat_model or "the server's first model")
        if openai
        else config.ollama.chat_model,
        attribution=Attribution(
            name="OpenAI-compatible server", url=redact_url(config.llm.base_url)
        )
        if openai
        else OLLAMA,
        installed=True,
        description="Lo-Bug's conversation turn: working memory, recalled memories, base memory",
        version=None,
        # Empty: any language (Home Assistant reads it as "*"); the chat model decides.
        languages=[config.speech.language] if config.speech.language else [],
    )
    return Info(
        asr=[
            AsrProgram(
                name=PROGRAM,
                attribution=LOBUG,
                installed=True,
                description="Lo-Bug speech-to-text",
                version=__version__,
                models=[speech_model],
                supports_transcript_streaming=False,
            )
        ],
        handle=[
            HandleProgram(
                name=PROGRAM,
                attribution=LOBUG,
                installed=True,
                description="Lo-Bug, the memory-keeping assistant",
                version=__version__,
                models=[agent],
                supports_handled_streaming=True,
            )
        ],
    )
