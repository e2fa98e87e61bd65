"""docs/grafana/swarmnode-dashboard.json and docs/prometheus/swarmnode-alerts.yml fit /metrics:
every PromQL expression parses (promql-parser), and every series it names is in a real scrape
of a daemon's status server (127.0.0.1) with the type the expression treats it as: `rate` and
`increase` only over counters and histogram buckets, a `_bucket` only of a histogram."""
import asyncio
import json
from pathlib import Path

import aiohttp
import promql_parser
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from swarmnode.status.server import StatusServer
from tests.unit.status.helpers import bootstrap_status, training_status

DOCS = Path(__file__).parents[3] / "docs"
DASHBOARD = DOCS / "grafana" / "swarmnode-dashboard.json"
ALERTS = DOCS / "prometheus" / "swarmnode-alerts.yml"
# Grafana's variables, as Grafana fills them in before it sends a query.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$instance": ".*", "${datasource}": "prometheus"}
PROMETHEUS_OWN = {"up"}  # series Prometheus makes for each scrape
HISTOGRAM_PARTS = ("_bucket", "_count", "_sum")
RATE_FUNCTIONS = {"rate", "irate", "increase"}


async def scrape(doc: dict) -> str:
    server = StatusServer(lambda: doc, "127.0.0.1", 0, prometheus=True)
    url = await server.start()
    try:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as response:
            assert response.status == 200
            return await response.text()
    finally:
        await server.stop()


@pytest.fixture(scope="module")
def served() -> dict[str, str]:
    """Series name as a query names it (counters with `_total`) -> type, over a training node's
    scrape and a bootstrap node's."""
    doc = training_status()
    doc["messages"] = {"accepted": {"peer_record": 3}, "rejected": {"expired": 2}, "rejected_by_sender": {}}
    types = {}
    for text in (asyncio.run(scrape(doc)), asyncio.run(scrape(bootstrap_status()))):
        for f in text_string_to_metric_families(text):
            types[f.name + ("_total" if f.type == "counter" else "")] = f.type
    return types


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"].removeprefix("label_values(").split(",")[0]
              for v in dashboard["templating"]["list"] if v["type"] == "query"]
    for name, value in GRAFANA_VARIABLES.items():
        exprs = [e.replace(name, value) for e in exprs]
    return exprs


def alert_exprs() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]


def selectors(expr: str) -> dict[str, bool]:
    """Each series name a selector in `expr` reads -> whether a rate function reads it."""
    found: dict[str, bool] = {}

    def visit(node):  # a call is visited before its arguments
        if isinstance(node, promql_parser.Call) and node.func.name in RATE_FUNCTIONS:
            found[node.args[0].vector_selector.name] = True
        elif isinstance(node, promql_parser.VectorSelector):
            found.setdefault(node.name, False)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def problems(expr: str, served: dict[str, str]) -> list[str]:
    out = []
    for name, rated in selectors(expr).items():
        if name in PROMETHEUS_OWN:
            continue
        base = next((name.removesuffix(s) for s in HISTOGRAM_PARTS if name.endswith(s)), None)
        if base is not None and served.get(base) == "histogram":
            kind = "histogram"
        elif name in served:
            kind = served[name]
        else:
            out.append(f"{name}: not served")
            continue
        if rated and kind == "gauge":
            out.append(f"{name}: a gauge under rate/increase")
        if name.endswith("_total") != (kind == "counter") and kind != "histogram":
            out.append(f"{name}: served as a {kind}")
    return out


@pytest.mark.parametrize("exprs", [dashboard_exprs, alert_exprs], ids=["dashboard", "alerts"])
def test_every_expression_parses_and_names_served_series_of_the_right_type(exprs, served):
    found = {e: p for e in exprs() if (p := problems(e, served))}
    assert found == {}


def test_the_dashboard_is_an_importable_dashboard_with_a_prometheus_datasource_variable():
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert all(t["datasource"]["uid"] == "${datasource}" for p in panels for t in p["targets"])
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in ("state", "steps / s", "outcome", "by reason", "summaries", "peers", "reachability", "relay",
                  "latency", "step time", "rollout groups rejected by reason"):
        assert topic in titles, topic


def test_the_alerts_cover_what_an_operator_is_paged_for():
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"][0]["rules"]
    named = {r["alert"]: r["expr"] for r in rules}
    assert all(r["annotations"]["summary"] for r in rules)
    for alert, series in (("SwarmnodeFailed", "swarmnode_node_state"), ("SwarmnodeNotTraining", "swarmnode_training_phase"),
                          ("SwarmnodeNoPeers", "swarmnode_peers"), ("SwarmnodeRejectsSpiking", "swarmnode_messages_rejected_total"),
                          ("SwarmnodeStepRateZero", "swarmnode_training_steps_total"),
                          ("SwarmnodeUnreachableWithoutRelay", "swarmnode_network_relays"),
                          ("SwarmnodeCheckpointFailures", "swarmnode_storage_checkpoint_failures"),
                          ("SwarmnodeLearnsNothing", "swarmnode_training_steps_without_spread_in_a_row"),
                          ("SwarmnodeOtherWindowPeers", "swarmnode_other_window_peers")):
        assert series in named[alert], alert


def test_a_bad_expression_or_a_missing_series_is_found(served):
    """The checks above can fail: a typo, an unknown series and a gauge under rate are each caught."""
    with pytest.raises(ValueError):
        promql_parser.parse("rate(swarmnode_peers[5m]")
    assert problems("swarmnode_no_such_series", served) == ["swarmnode_no_such_series: not served"]
    assert problems("rate(swarmnode_peers[5m])", served) == ["swarmnode_peers: a gauge under rate/increase"]
    assert problems("swarmnode_training_steps", served) == ["swarmnode_training_steps: not served"]
