"""Real public event schemas and their example payloads, unedited, from pinned PyPI and npm
packages: the corpus the differential tests load into the contract reader and judge against
the `jsonschema` package.

The sources (versions as pinned in pyproject.toml's `dev` extra and tests/interop/package.json;
another installed version counts as missing):

- npm `@octokit/webhooks-schemas` (MIT): the community's JSON Schemas (draft-07) of GitHub's
  webhooks, one `schema.json` with a definition per event and action (`issues$opened`,
  `push$event`). An event type's schema is that definition with the document's whole
  `definitions` copied beside it, so its `$ref`s (`#/definitions/...`) resolve as written.
  Examples: npm `@octokit/webhooks-examples` (MIT), `api.github.com/index.json`, every example
  of the event (and action), each re-serialised from that document with `json.dumps`.
- PyPI `githubkit` (MIT): the pydantic v2 webhook models GitHub's SDK generates from GitHub's
  own OpenAPI description (package `githubkit-schemas-2026-03-10`), `Model.model_json_schema()`
  as pydantic writes it (optional fields: `anyOf [{const: "<UNSET>"}, T, {type: null}]`).
  Examples: the octokit examples of the same event and action.
- PyPI `aws-lambda-powertools` (MIT-0): the parser's pydantic models of AWS event sources,
  `model_json_schema()`. The package ships no example events; the examples are the sample
  events of PyPI `aws-sam-cli` 1.170.0 (Apache-2.0; `sam local generate-event`'s templates,
  `{{{placeholders}}}` and all), vendored byte for byte in `aws_sam_events/` with its LICENSE
  and NOTICE (see the README there).
- CloudEvents (Apache-2.0): the CloudEvents 1.0 spec's JSON Schema (draft-07) as npm
  `cloudevents` (the CNCF JavaScript SDK) ships it, the `schema22` literal of its precompiled
  validator `dist/schema/v1.js` (no JSON file is shipped), and PyPI `cloudevents`' pydantic v2
  `CloudEvent` model's `model_json_schema()`. Example: the one that model's schema carries
  (its `example` keyword), for both.

Google's `@google/events` ships TypeScript types only (no JSON Schema), so it is not a source.

`corpus_events()` skips a source whose packages are missing (`npm ci --prefix tests/interop`,
`pip install -e '.[dev]'`); `missing_sources()` says which and why. The schemas are shared
between calls: copy one before changing it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from resources.backports import tomllib

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[3]
NODE_MODULES = PROJECT / "tests" / "interop" / "node_modules"
SAM_EVENTS = HERE / "aws_sam_events"


@dataclass(frozen=True)
class CorpusEvent:
    source: str  # the package and version, e.g. "npm @octokit/webhooks-schemas 7.6.1"
    name: str  # the event type, unique in the corpus, e.g. "octokit.push"
    schema: dict  # the JSON Schema, unedited and self-contained
    examples: tuple[str, ...]  # example payloads (JSON texts), as shipped


class _Missing(Exception):
    """A source's package is not installed at its pinned version."""


def _pinned_npm(package: str) -> str:
    pins = json.loads((PROJECT / "tests" / "interop" / "package.json").read_text())
    return pins["dependencies"][package]


def _pinned_pypi(distribution: str) -> str:
    dev = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    for requirement in dev["optional-dependencies"]["dev"]:
        name, _, version = requirement.partition("==")
        if name.strip().lower() == distribution.lower():
            return version.strip()
    raise KeyError(f"{distribution} is not pinned (==) in pyproject.toml's dev extra")


def _npm(package: str) -> tuple[Path, str]:
    """The installed package's folder and version, checked against its pin."""
    folder, pinned = NODE_MODULES / package, _pinned_npm(package)
    if not (folder / "package.json").is_file():
        raise _Missing(f"npm {package} {pinned} is not installed (npm ci --prefix tests/interop)")
    installed = json.loads((folder / "package.json").read_text())["version"]
    if installed != pinned:
        raise _Missing(f"npm {package} is {installed}, the corpus pins {pinned}")
    return folder, f"npm {package} {pinned}"


def _pypi(distribution: str) -> str:
    pinned = _pinned_pypi(distribution)
    try:
        installed = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise _Missing(f"PyPI {distribution} {pinned} is not installed (.[dev])") from None
    if installed != pinned:
        raise _Missing(f"PyPI {distribution} is {installed}, the corpus pins {pinned}")
    return f"PyPI {distribution} {pinned}"


# GitHub events (event or event.action) with their githubkit model, if one is taken.
GITHUB_EVENTS = {
    "push": "WebhookPush",
    "issues.opened": "WebhookIssuesOpened",
    "issue_comment.created": "WebhookIssueCommentCreated",
    "pull_request.opened": "WebhookPullRequestOpened",
    "pull_request.closed": None,
    "release.published": "WebhookReleasePublished",
    "star.created": "WebhookStarCreated",
    "watch.started": None,
    "fork": None,
    "create": None,
    "delete": None,
    "workflow_run.completed": "WebhookWorkflowRunCompleted",
    "workflow_job.completed": None,
    "check_run.completed": None,
    "ping": "WebhookPing",
}


@functools.cache
def _octokit_examples() -> dict[str, tuple[str, ...]]:
    """Per GitHub event (event or event.action), its octokit examples as JSON texts."""
    folder, _ = _npm("@octokit/webhooks-examples")
    by_event = {e["name"]: e["examples"] for e in json.loads(
        (folder / "api.github.com" / "index.json").read_text())}  # fmt: skip
    examples = {}
    for event in GITHUB_EVENTS:
        name, _, action = event.partition(".")
        examples[event] = tuple(
            json.dumps(example, ensure_ascii=False)
            for example in by_event[name]
            if not action or example.get("action") == action
        )
    return examples


def _octokit() -> list[CorpusEvent]:
    folder, source = _npm("@octokit/webhooks-schemas")
    document = json.loads((folder / "schema.json").read_text())
    examples = _octokit_examples()
    events = []
    for event in GITHUB_EVENTS:
        name, _, action = event.partition(".")
        definition = document["definitions"][f"{name}${action or 'event'}"]
        schema = {**definition, "definitions": document["definitions"]}
        events.append(CorpusEvent(source, f"octokit.{event}", schema, examples[event]))
    return events


def _githubkit() -> list[CorpusEvent]:
    source = _pypi("githubkit")
    models_source = _pypi("githubkit-schemas-2026-03-10")
    models = importlib.import_module("githubkit_schemas.v2026_03_10.models")
    try:
        examples = _octokit_examples()
    except _Missing:
        examples = {}
    return [
        CorpusEvent(
            f"{source} ({models_source})",
            f"githubkit.{event}",
            getattr(models, model).model_json_schema(),
            examples.get(event, ()),
        )
        for event, model in GITHUB_EVENTS.items()
        if model
    ]


# Powertools parser model -> its event type name and the SAM CLI sample events it parses.
POWERTOOLS_MODELS = {
    "S3Model": ("s3", ("s3/S3Put.json", "s3/S3Delete.json")),
    "SqsModel": ("sqs", ("sqs/Sqs.json",)),
    "SnsModel": ("sns", ("sns/Sns.json",)),
    "DynamoDBStreamModel": ("dynamodb_stream", ("dynamodb/DynamoDBUpdate.json",)),
    "KinesisDataStreamModel": ("kinesis", ("kinesis/Kinesis.json",)),
    "KinesisFirehoseModel": ("firehose", ("kinesis/KinesisFirehose.json",)),
    "APIGatewayProxyEventModel": ("apigateway_rest", ("apigateway/AwsProxy.json",)),
    "APIGatewayProxyEventV2Model": ("apigateway_http", ("apigateway/HttpApi.json",)),
    "AlbModel": ("alb", ("alb/ALBRequest.json",)),
    "CloudWatchLogsModel": ("cloudwatch_logs", ("cloudwatch/CloudwatchLogs.json",)),
    "EventBridgeModel": ("eventbridge", ("cloudwatch/ScheduledEvent.json",)),
    "SesModel": ("ses", ("ses/SesEmailReceiving.json",)),
}


def _powertools() -> list[CorpusEvent]:
    source = _pypi("aws-lambda-powertools")
    models = importlib.import_module("aws_lambda_powertools.utilities.parser.models")
    return [
        CorpusEvent(
            f"{source} (examples: PyPI aws-sam-cli 1.170.0)",
            f"powertools.{name}",
            getattr(models, model).model_json_schema(),
            tuple((SAM_EVENTS / path).read_text() for path in paths),
        )
        for model, (name, paths) in POWERTOOLS_MODELS.items()
    ]


def _cloudevents_npm() -> list[CorpusEvent]:
    folder, source = _npm("cloudevents")
    text = (folder / "dist" / "schema" / "v1.js").read_text()
    found = re.search(r"const schema22 = ", text)
    if found is None:
        raise _Missing(f"{source}: dist/schema/v1.js holds no `const schema22 = {{...}}`")
    schema, _ = json.JSONDecoder().raw_decode(text, found.end())
    return [CorpusEvent(source, "cloudevents.spec", schema, _cloudevents_example())]


def _cloudevents_example() -> tuple[str, ...]:
    try:
        example = _cloudevents_model()[1]["example"]
    except _Missing:
        return ()
    return (json.dumps(example, ensure_ascii=False),)


@functools.cache
def _cloudevents_model() -> tuple[str, dict]:
    source = _pypi("cloudevents")
    event = importlib.import_module("cloudevents.v1.pydantic.v2").CloudEvent
    return source, event.model_json_schema()


def _cloudevents_pypi() -> list[CorpusEvent]:
    source, schema = _cloudevents_model()
    return [CorpusEvent(source, "cloudevents.pydantic", schema, _cloudevents_example())]


SOURCES: dict[str, Callable[[], list[CorpusEvent]]] = {
    "octokit": _octokit,
    "githubkit": _githubkit,
    "powertools": _powertools,
    "cloudevents (npm)": _cloudevents_npm,
    "cloudevents (PyPI)": _cloudevents_pypi,
}


@functools.cache
def _load() -> tuple[tuple[CorpusEvent, ...], tuple[str, ...]]:
    events, missing = [], []
    for label, load in SOURCES.items():
        try:
            events.extend(load())
        except (_Missing, ImportError) as error:
            missing.append(f"{label}: {error}")
    names = [event.name for event in events]
    assert len(set(names)) == len(names), "corpus event names are not unique"
    return tuple(events), tuple(missing)


def corpus_events() -> list[CorpusEvent]:
    """Every event type of the sources whose packages are installed (see `missing_sources`)."""
    return list(_load()[0])


def missing_sources() -> list[str]:
    """The sources `corpus_events` skipped, each with why (a package missing or another
    version than pinned)."""
    return list(_load()[1])
