"""The config side of the model: a validated :class:`Suite` and its parts (prompts, providers, tests and
their assertions), as ``config`` builds them. Frozen dataclasses; imports nothing of evalh."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from evalh.model.options import RunOptions
from evalh.model.trace import TracingSettings

__all__ = [
    "RECORDED_PROVIDER_ID",
    "AssertionSpec",
    "Prompt",
    "ProviderChoice",
    "ProviderSpec",
    "ShardInfo",
    "Suite",
    "TestCase",
    "asks_provider",
]


@dataclass(frozen=True)
class ProviderSpec:
    """One provider as the config names it: ``openai:chat:gpt-4o-mini`` or ``{id, label, config}``."""

    id: str
    label: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""  # JSON path in the config, for messages: "providers[1]"
    base_dir: str = ""  # the config file's directory: script paths resolve against it
    prompts: tuple[str, ...] | None = None  # the prompts it runs (labels / ids, as a test's); None: all
    transform: str | None = None  # promptfoo's provider transform: code applied to each output it gives
    # the id the provider gives itself (a JavaScript provider's id()), which reports show as promptfoo's
    # do; ``id`` still names the provider to build. None: the provider's id is ``id``
    named_id: str | None = None

    @property
    def shown_id(self) -> str:
        """The provider's id in reports: the one it gives itself, else the config's."""
        return self.named_id or self.id

    @property
    def display(self) -> str:
        return self.label or self.shown_id


@dataclass(frozen=True)
class ProviderChoice:
    """A provider override (assertion ``provider`` or ``options.provider``).

    Either one provider for every purpose (``default``), or promptfoo's typed map
    ``{embedding: ..., text: ...}``: ``similar`` takes ``embedding``, judges take ``text``. Embedding
    assertions may name several ``models`` instead (``provider: [a, b]`` or ``config.providers``):
    each scores, and the mean is reported.
    """

    default: ProviderSpec | None = None
    embedding: ProviderSpec | None = None
    text: ProviderSpec | None = None
    models: tuple[ProviderSpec, ...] = ()  # several embedders that each score: ``provider: [a, b]``

    def for_kind(self, kind: str) -> ProviderSpec | None:
        """The provider this choice names for ``kind`` ("embedding", "tokens" or "text"), or None.

        Token vectors (BERTScore) come from the embedding slot of a typed map."""
        typed = self.embedding if kind in ("embedding", "tokens") else self.text
        return typed or self.default


@dataclass(frozen=True)
class Prompt:
    """A prompt template: a string, or a chat message list (``[{role, content}]``); or, with
    ``function`` (``file://x.py:fn``, ``file://x.js``, ``exec:cmd``, ``portkey://id``...), a source
    that gives the prompt for each row. ``config`` is merged into the provider's config for its calls."""

    raw: str | tuple[Mapping[str, Any], ...]
    label: str
    id: str = ""
    path: str = ""
    function: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    # why its template cannot render (a syntax error, an unknown filter), told at load: its rows are
    # ERRORs with this message and the other prompts run, as in promptfoo (under --strict, a config error)
    unusable: str = ""


@dataclass(frozen=True, slots=True)  # slots: a 50,000-test suite holds 300,000 of them
class AssertionSpec:
    """One assertion of one test, after the defaultTest merge and template rendering of its value.

    ``type`` is the type as written (``not-icontains``): what every message, report and ``spec.type``
    shows. ``negate`` is true for a ``not-`` type and ``base_type`` names its registry entry
    (``icontains``); ``AssertionSpec(type="icontains", negate=True)`` is the same assertion.
    ``threshold`` is what the config says (None when unset); the registry supplies defaults.

    One spec may belong to several tests: the load shares defaultTest's assertions that no test's vars
    go into (see config/build.py _default_assertions), whose path and place are the same in every test.
    So a cache keyed by ``id(spec)`` must hold only what the spec alone decides, never a test's or a row's.
    """

    type: str
    negate: bool = False
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    provider: ProviderChoice | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    children: tuple[AssertionSpec, ...] = ()  # assert-set members
    rubric_prompt: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict)  # the assertion as written, for reports
    path: str = ""  # "tests[3].assert[1]"

    def __post_init__(self) -> None:
        # one spelling of a negated type, whichever half the caller gave: "not-x", or "x" with negate
        if self.negate and not self.type.startswith("not-"):
            object.__setattr__(self, "type", f"not-{self.type}")
        elif not self.negate and self.type.startswith("not-"):
            object.__setattr__(self, "negate", True)

    @classmethod
    def plain(
        cls,
        written: str,
        negate: bool,
        value: Any,
        threshold: float | None,
        weight: float,
        config: Mapping[str, Any],
        raw: Mapping[str, Any],
        path: str,
    ) -> AssertionSpec:
        """The spec of an assertion written with nothing but a type, value, threshold and weight: equal
        to ``AssertionSpec(type=written, negate=negate, ...)`` with every other field at its default, made
        without the generated ``__init__``'s keywords and ``__post_init__`` (a third of building a
        30,000-assertion suite). ``written`` and ``negate`` must already agree (``not-x`` with True)."""
        spec = _SPEC_DRAFT()  # filled by plain stores, then made a spec (see _draft_of)
        spec.type = written
        spec.negate = negate
        spec.value = value
        spec.threshold = threshold
        spec.weight = weight
        spec.metric = None
        spec.provider = None
        spec.config = config
        spec.children = ()
        spec.rubric_prompt = None
        spec.raw = raw
        spec.path = path
        spec.__class__ = AssertionSpec
        return cast(AssertionSpec, spec)

    @property
    def base_type(self) -> str:
        """The registry's name of the type: ``icontains`` for ``not-icontains``."""
        return self.type[4:] if self.negate else self.type

    @property
    def full_type(self) -> str:
        """The type as written; the same as ``type`` (kept for callers that name it so)."""
        return self.type


def _slotted_fields(cls: type) -> tuple[str, ...]:
    """The fields of the frozen slots dataclass ``cls``, each with its slot, in order."""
    fields = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    assert fields == cls.__slots__, "a field without its slot"  # type: ignore[attr-defined]
    return fields


def _draft_of(cls: type) -> Any:
    """A plain class with the slots of the frozen slots dataclass ``cls``, for its fast constructors: a
    draft's fields are set by plain attribute stores (which the interpreter specializes to a slot
    write), and the filled draft becomes a ``cls`` by ``__class__`` assignment, which Python allows
    between classes of the same slots. That costs a fifth of setting each frozen field through its
    descriptor (``object.__setattr__``'s way): 30,000 specs. Checked here, at import: a layout Python
    refuses raises at once."""
    fields = _slotted_fields(cls)
    draft = type(f"_{cls.__name__}Draft", (), {"__slots__": fields, "__module__": cls.__module__})
    draft().__class__ = cls  # TypeError if Python held the layouts different
    return draft


_SPEC_DRAFT = _draft_of(AssertionSpec)  # see AssertionSpec.plain


def _slot_setters(cls: type) -> tuple[Any, ...]:
    """The setters of a slots dataclass's fields, in field order: for an ``__init__`` of its own, where the
    object already exists (a draft cannot help), each field's slot set through its descriptor, as
    ``object.__setattr__`` does after looking the name up (model/results.py's graded assertions and rows)."""
    fields = _slotted_fields(cls)
    return tuple(getattr(cls, name).__set__ for name in fields)


# The provider of rows whose output the test records: no provider is called and no prompt rendered.
RECORDED_PROVIDER_ID = "recorded"


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test after the defaultTest merge. ``output`` is a recorded output, graded without a provider."""

    __test__ = False  # not a pytest class

    index: int
    description: str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    asserts: tuple[AssertionSpec, ...] = ()
    threshold: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    provider: ProviderChoice | None = None  # options.provider (grader / embedder override)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None
    has_output: bool = False
    path: str = ""
    prompts: tuple[str, ...] | None = None  # the prompts it runs against (labels / ids); None: all
    providers: tuple[str, ...] | None = None  # the providers it runs on (labels / ids); None: all
    late_vars: frozenset[str] = frozenset()  # vars rendered when it runs: they read a storeOutputAs name
    # the test's (or defaultTest's) ``provider:``: it answers the test in place of the provider under
    # test, which it is handed (promptfoo's test-level provider; evalh takes promptfoo:simulated-user)
    stand_in: ProviderSpec | None = None
    # assertScoringFunction (test's, else defaultTest's): file://score.py[:fn] / .js[:fn] deciding the verdict
    scoring_function: str | None = None

    @classmethod
    def made(
        cls,
        index: int,
        description: str | None,
        vars: Mapping[str, Any],
        asserts: tuple[AssertionSpec, ...],
        threshold: float | None,
        options: Mapping[str, Any],
        provider: ProviderChoice | None,
        metadata: Mapping[str, Any],
        output: Any,
        has_output: bool,
        path: str,
        prompts: tuple[str, ...] | None,
        providers: tuple[str, ...] | None,
        late_vars: frozenset[str],
        stand_in: ProviderSpec | None,
        scoring_function: str | None,
    ) -> TestCase:
        """``TestCase(index=index, ...)`` with every field given, made without the frozen class's
        generated ``__init__`` (which sets each field through ``object.__setattr__`` by name: a tenth
        of building a 5,000-test suite)."""
        test = _TEST_DRAFT()  # filled by plain stores, then made a test (see _draft_of)
        test.index = index
        test.description = description
        test.vars = vars
        test.asserts = asserts
        test.threshold = threshold
        test.options = options
        test.provider = provider
        test.metadata = metadata
        test.output = output
        test.has_output = has_output
        test.path = path
        test.prompts = prompts
        test.providers = providers
        test.late_vars = late_vars
        test.stand_in = stand_in
        test.scoring_function = scoring_function
        test.__class__ = TestCase
        return cast(TestCase, test)


_TEST_DRAFT = _draft_of(TestCase)  # see TestCase.made


@dataclass(frozen=True)
class ShardInfo:
    """Which share of a run this suite is (``evalh run --shard i/N``, see evalh/runner/sharding.py),
    recorded in its reports so that ``evalh merge`` can check the shards it is given make one run."""

    index: int  # 1-based, as --shard writes it
    total: int
    fingerprint: str  # what every shard of one run shares: its tests, prompts, providers and repeat
    tests: int  # the tests of this shard
    run_tests: int  # the tests of every shard together (the unsharded run's)


@dataclass(frozen=True)
class Suite:
    """A validated, fully resolved config."""

    tests: tuple[TestCase, ...]
    prompts: tuple[Prompt, ...] = ()
    providers: tuple[ProviderSpec, ...] = ()
    description: str | None = None
    default_provider: ProviderChoice | None = None  # --grader, or the suite-wide default
    evaluate_options: RunOptions = field(default_factory=RunOptions)  # the config's evaluateOptions
    output_paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    config_path: str | None = None
    raw_config: Mapping[str, Any] = field(default_factory=dict)  # secrets redacted
    input_files: tuple[str, ...] = ()  # every file the load read, config first: no report may overwrite one
    nunjucks_filters: Mapping[str, str] = field(default_factory=dict)  # name -> file:// reference
    derived_metrics: tuple[tuple[str, str], ...] = ()  # derivedMetrics: (name, math expression), in order
    # Python callables of a mapping given to evalh.evaluate, by the names that stand for them in the
    # config (evalh/runtimes/callables.py): a rerun of this suite calls them again.
    callables: Mapping[str, Any] = field(default_factory=dict)
    shard: ShardInfo | None = None  # the share of the run it is (--shard), None for a whole run
    tracing: TracingSettings = field(default_factory=TracingSettings)  # the config's tracing: block
    # extensions: promptfoo's hook functions, in order (evalh/runtimes/extension_hooks.py; beforeAll ran
    # while the config loaded, the runner calls beforeEach, the session afterEach and afterAll)
    extensions: tuple[str, ...] = ()


def asks_provider(test: TestCase, provider: ProviderSpec) -> bool:
    """Whether the row of ``test`` x ``provider`` asks the provider for its output (not recorded)."""
    return not test.has_output and provider.id != RECORDED_PROVIDER_ID
