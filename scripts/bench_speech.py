#!/usr/bin/env python3
"""Word error rate and latency of POST /chat/audio with real speech, with and without the
household's names in memory, hints as faster-whisper hotwords or initial prompt, beam 1 and 5.

Twelve sentences spoken by espeak-ng (16 kHz mono WAV through sox), eight of them naming the
household (puppy Biscuit, brother Oliver, sister Rosalind in Bristol, cat Pirukas), go to the
real daemon app on a local port, its chat model a fake Ollama (tests/fake_ollama.py, instant),
its speech model a CTranslate2 Whisper directory (the one scripts/test assembles by default).
"with names" means the memory holds four facts naming them, written through /v1/memories
before the clips are sent; "without" is an empty memory. Latency is the whole request over
the clip's length (p50, p95); the WER is over all the words of the run (numbers as words,
punctuation and case ignored). CPU seconds per audio second (the daemon's process, every
thread) is the cost that does not depend on what else the machine runs: on an idle machine the
latency is about that divided by the cores the model uses.

Usage: .venv/bin/python scripts/bench_speech.py [--model DIR] [--runs none,hotwords,prompt]
       [--beams 1,5] [--threads 0] [--language en] [--repeat 1] [--show]
Goal (issue 28, 2-core machine): WER <= 0.15 with the names at p50 <= 0.6x the audio;
without them no worse than 0.259.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from audio_fixtures import speak_wav  # noqa: E402
from daemon_proc import free_port, wait_http  # noqa: E402

from lobug.app import create_app  # noqa: E402
from lobug.config import load_config  # noqa: E402

DEFAULT_MODEL = Path(
    os.environ.get("LOBUG_TEST_WHISPER_MODEL")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lobug/whisper-base"
)
FACTS = (
    "The user has a puppy called Biscuit.",
    "The user's brother Oliver plays the guitar.",
    "The user's sister Rosalind lives in Bristol.",
    "The user's cat Pirukas sleeps on the sofa.",
)
SENTENCES = (
    "We adopted a puppy called Biscuit.",
    "Did Rosalind call about the trip to Bristol?",
    "Pirukas knocked a glass off the table.",
    "Oliver is coming for dinner on Saturday.",
    "Remind me to take Biscuit to the vet tomorrow.",
    "My sister Rosalind lives in Bristol.",
    "Has Pirukas been fed this morning?",
    "Tell Oliver that the game starts at seven.",
    "What is the weather like today?",
    "Turn off the lights in the kitchen.",
    "Set a timer for ten minutes.",
    "Play some quiet music in the living room.",
)
NUMBERS = dict(enumerate("zero one two three four five six seven eight nine ten".split()))


def words(text: str) -> list[str]:
    found = re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))
    return [NUMBERS.get(int(w), w) if w.isdigit() else w for w in found]


def edits(reference: list[str], hypothesis: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions, insertions, deletions)."""
    row = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        prev, row[0] = row[:], i
        for j, hyp in enumerate(hypothesis, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ref != hyp))
    return row[-1]


async def run(
    args: argparse.Namespace, clips: list[tuple[str, bytes, float]], *, mode: str, beam: int
) -> dict[str, Any]:
    """One app, one configuration: every clip through POST /chat/audio."""
    with tempfile.TemporaryDirectory(prefix="lobug-bench-speech-") as data:
        config = load_config(
            None,
            env={},
            overrides={
                "storage.data_dir": data,
                "ollama.host": args.ollama,
                "embedding.backend": "hashing",
                "embedding.dim": 64,
                "memory.enabled": True,
                "wyoming.enabled": False,
                "speech.model": str(args.model),
                "speech.language": args.language or None,
                "speech.compute_type": "int8",
                "speech.cpu_threads": args.threads,
                "speech.beam_size": beam,
                "speech.vocabulary": "off" if mode == "none" else mode,
                "log.level": "WARNING",
            },
        )
        runner = web.AppRunner(create_app(config))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        url = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as session:
                await ready(session, url)
                if mode != "none":
                    for fact in FACTS:
                        async with session.post(f"{url}/v1/memories", json={"content": fact}) as r:
                            assert r.status == 201, await r.text()
                return await send_clips(session, url, clips, args.repeat)
        finally:
            await runner.cleanup()


async def ready(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(600):  # the model loads in the background at start
        async with session.get(f"{url}/health") as resp:
            if (await resp.json())["stt"]:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError("the speech model did not load; check --model")


async def send_clips(
    session: aiohttp.ClientSession, url: str, clips: list[tuple[str, bytes, float]], repeat: int
) -> dict[str, Any]:
    """Each clip `repeat` times: its latency is the best of them (on a shared machine the
    others measure the neighbours), its words those of the first (decoding is deterministic)."""
    errors = total = 0
    ratios: list[float] = []
    cpu = audio = 0.0
    heard: list[tuple[str, str]] = []
    for sentence, wav, seconds in clips:
        times, transcripts = [], []
        for _ in range(repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            async with session.post(
                f"{url}/chat/audio", data=wav, headers={"Content-Type": "audio/wav"}
            ) as resp:
                body = await resp.json()
                assert resp.status == 200, body
            times.append(time.perf_counter() - started)
            cpu += time.process_time() - cpu_started
            audio += seconds
            transcripts.append(body["transcript"])
        ratios.append(min(times) / seconds)
        reference = words(sentence)
        errors += edits(reference, words(transcripts[0]))
        total += len(reference)
        heard.append((sentence, transcripts[0]))
    ratios.sort()
    return {
        "wer": errors / total,
        "p50": statistics.median(ratios),
        "p95": ratios[min(len(ratios) - 1, round(0.95 * (len(ratios) - 1)))],
        "cpu": cpu / audio,
        "heard": heard,
    }


def speak(workdir: Path) -> list[tuple[str, bytes, float]]:
    clips = []
    for n, sentence in enumerate(SENTENCES):
        wav = speak_wav(sentence, workdir / f"{n}.wav").read_bytes()
        clips.append((sentence, wav, (len(wav) - 44) / 2 / 16000))
    return clips


async def main(args: argparse.Namespace) -> None:
    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_ollama.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    args.ollama = f"http://127.0.0.1:{port}"
    try:
        await wait_http(args.ollama + "/api/version")
        with tempfile.TemporaryDirectory() as workdir:
            clips = speak(Path(workdir))
        seconds = sum(c[2] for c in clips)
        print(
            f"{len(clips)} clips, {seconds:.1f} s of espeak-ng speech; model {args.model}, int8,"
            f" cpu_threads {args.threads}, language {args.language or 'detected'},"
            f" {os.cpu_count()} CPUs, latency best of {args.repeat}"
        )
        print("| names | hint | beam | WER | latency p50 | latency p95 | CPU s / audio s |")
        print("|---|---|---|---|---|---|---|")
        for beam in (int(b) for b in args.beams.split(",")):
            for mode in args.runs.split(","):
                result = await run(args, clips, mode=mode, beam=beam)
                names = "no" if mode == "none" else "yes"
                hint = "—" if mode == "none" else mode
                print(
                    f"| {names} | {hint} | {beam} | {result['wer']:.3f} |"
                    f" {result['p50']:.2f}× | {result['p95']:.2f}× | {result['cpu']:.2f} |",
                    flush=True,
                )
                if args.show:
                    for said, heard in result["heard"]:
                        if words(said) != words(heard):
                            print(f"|   | {said!r} → {heard!r} | | | | | |")
    finally:
        fake.kill()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--runs", default="none,hotwords,prompt")
    parser.add_argument("--beams", default="1,5")
    parser.add_argument("--threads", type=int, default=0, help="speech.cpu_threads (0: auto)")
    parser.add_argument("--language", default="en", help='"" lets Whisper detect it')
    parser.add_argument("--repeat", type=int, default=1, help="latency: best of N per clip")
    parser.add_argument("--show", action="store_true", help="print every misheard sentence")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
