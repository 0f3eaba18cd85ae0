"""docs/SCALE_OUT.md and deploy/docker-compose.yml say what the product does: the compose file starts
the replicas with the recipe's flags and points the app's fleet setting at both of them."""

from __future__ import annotations

from pathlib import Path

import yaml

from ocr_app.engines.remote import parse_endpoints

ROOT = Path(__file__).parents[1]


def test_compose_runs_two_recipe_replicas_behind_the_app():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    services = compose["services"]
    replicas = [name for name, s in services.items() if "vllm" in str(s.get("image", ""))]
    assert sorted(replicas) == ["vllm-a", "vllm-b"]
    for name in replicas:
        cmd = services[name]["command"]
        assert "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor" in cmd
        assert "--no-enable-prefix-caching" in cmd and cmd[cmd.index("--mm-processor-cache-gb") + 1] == "0"
        assert "/health" in " ".join(services[name]["healthcheck"]["test"])
    gpus = [services[n]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] for n in replicas]
    assert gpus == [["0"], ["1"]]
    env = dict(e.split("=", 1) for e in services["app"]["environment"])
    urls = [e.url for e in parse_endpoints(env["DEEPSEEK_OCR_REMOTE_URL"])]
    assert urls == ["http://vllm-a:8000/v1", "http://vllm-b:8000/v1"]
    assert set(services["app"]["depends_on"]) == set(replicas)


def test_scale_out_doc_toml_example_parses(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "SCALE_OUT.md").read_text()
    toml = text.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "fleet.toml"
    path.write_text(toml)
    monkeypatch.setenv("GPU1_KEY", "k1")
    eps = parse_endpoints(str(path))
    assert [(e.weight, e.max_in_flight, e.timeout_s) for e in eps] == [(2, 32, 600), (1.0, 8, 600)]
    assert eps[0].api_key == "k1"
