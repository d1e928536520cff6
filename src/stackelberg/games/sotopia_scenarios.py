"""Sotopia scenarios as data: the project's format, its loader, and the public dataset's.

The project's format (YAML or JSON; docs/games.md, "Sotopia")::

    scenarios:
      - id: bike_sale              # unique
        split: train               # train | test
        category: negotiation      # negotiation, persuasion, cooperation,
                                   # conflict_resolution, exchange, secret_keeping
        setting: "..."             # the shared situation, seen by both
        relationship: strangers    # strangers, acquaintances, friends, family, ...
        characters:                # exactly two; the first one speaks first
          - {name, age, occupation, personality, values, secret,
             goal, goal_keywords: [...], secret_words: [...]}

``goal_keywords`` (at least one) and ``secret_words`` are what the rule-based evaluator looks
for (stackelberg.games.sotopia_scores). The public Sotopia dataset (environment profiles,
agent profiles and the task lists of the "hard" 90 and "all" 450 splits) is read by
``load_public`` and written in the project's format by ``stackelberg sotopia import``; its
keywords are taken from the goal and secret texts (``keywords``).

A bad file raises ``ScenarioError``: one line naming the file, the scenario and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stackelberg.games.base import ConfigError

#: the scenarios shipped with the package
BUILTIN = Path(__file__).with_name("sotopia_data") / "scenarios.yaml"
CATEGORIES = (
    "negotiation",
    "persuasion",
    "cooperation",
    "conflict_resolution",
    "exchange",
    "secret_keeping",
)
#: the public dataset's relationship codes
RELATIONSHIPS = {
    0: "strangers",
    1: "know each other by name",
    2: "acquaintances",
    3: "friends",
    4: "romantic partners",
    5: "family members",
}
#: public task lists by split name, as the paper's release names them
TASK_FILES = {"hard": "hard_tasks_90.json", "all": "testing_tasks_450.json"}


class ScenarioError(ConfigError):
    """A scenario file that cannot be used; one line naming the scenario and the field."""


Text = Annotated[str, Field(min_length=1)]


class Character(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Text
    age: Annotated[int, Field(ge=0, le=130)]
    occupation: Text
    personality: str = ""
    values: str = ""
    secret: str = ""
    goal: Text
    goal_keywords: Annotated[tuple[Text, ...], Field(min_length=1)]
    secret_words: tuple[Text, ...] = ()

    @field_validator("goal_keywords", "secret_words", mode="before")
    @classmethod
    def _words(cls, words: Any) -> Any:
        """YAML reads ``[350, deal]`` as a number and a word: both are words here."""
        if isinstance(words, list | tuple):
            return tuple(
                str(w).strip().lower() if isinstance(w, int | float | str) else w for w in words
            )
        return words

    def profile(self) -> str:
        """What anyone may know of the character (no goal, no secret)."""
        parts = [f"{self.name}, {self.age}, {self.occupation}."]
        if self.personality:
            parts.append(f"Personality: {self.personality}")
        if self.values:
            parts.append(f"Values: {self.values}")
        return " ".join(parts)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]+$")]
    split: Literal["train", "test"]
    category: str
    setting: Text
    relationship: Text
    characters: Annotated[tuple[Character, Character], Field()]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or "(the scenario)"
    return f"{field}: {err['msg'].lower()}"


def parse_scenarios(raw: Any, source: str) -> tuple[Scenario, ...]:
    """Scenarios from the parsed content of a file in the project's format."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("scenarios"), list):
        raise ScenarioError(f"{source}: expected a mapping with a 'scenarios' list")
    out: list[Scenario] = []
    seen: set[str] = set()
    for i, item in enumerate(raw["scenarios"]):
        name = item.get("id") if isinstance(item, Mapping) else None
        where = f"{source}: scenario {name!r}" if name else f"{source}: scenario #{i + 1}"
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{where}: not a mapping")
        try:
            scenario = Scenario.model_validate(dict(item))
        except ValidationError as exc:
            raise ScenarioError(f"{where}: {_first_error(exc)}") from None
        if scenario.id in seen:
            raise ScenarioError(f"{where}: id: used by an earlier scenario")
        seen.add(scenario.id)
        out.append(scenario)
    if not out:
        raise ScenarioError(f"{source}: no scenarios")
    return tuple(out)


def _read(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ScenarioError(
            f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'} ({first})"
        ) from None


@lru_cache(maxsize=16)
def _load(path: str, mtime: float) -> tuple[Scenario, ...]:
    return parse_scenarios(_read(Path(path)), path)


def load_scenarios(path: str | Path | None = None) -> tuple[Scenario, ...]:
    """The scenarios of a file in the project's format (None: the shipped ones); cached
    until the file changes."""
    p = Path(path) if path else BUILTIN
    if not p.is_file():
        raise ScenarioError(f"scenarios: {p}: no such file")
    return _load(str(p), p.stat().st_mtime)


def select(scenarios: Sequence[Scenario], split: str) -> tuple[Scenario, ...]:
    """The scenarios of ``split`` (``all``: every one)."""
    return tuple(s for s in scenarios if split == "all" or s.split == split)


# ---- the public Sotopia dataset ----------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}|\d+")
_STOP = frozenset(
    """about above after again against also although among another anything around because
    been before being below between both cannot could doing down during each either else
    even ever every from further have having here into itself just know least less like
    make many might more most much must need never only other otherwise over perhaps quite
    rather really same several should since some something still such than that their them
    then there these they thing this those though through under until upon very want were
    what when where whether which while will with within without would your yours goal
    convince person someone agent other make sure trying tries they're you're don't""".split()
)


def keywords(text: str, most: int = 4) -> tuple[str, ...]:
    """The numbers and then the longest distinct content words of ``text`` (``most`` in
    all), in their order of appearance: the rule-based evaluator's words for a goal or a
    secret that came without any."""
    words = [w.lower().strip("'-") for w in _WORD.findall(text)]
    words = [w for w in dict.fromkeys(words) if w not in _STOP]
    ranked = sorted(words, key=lambda w: (not w.isdigit(), -len(w)))[:most]
    return tuple(w for w in words if w in ranked)


def _records(folder: Path, name: str) -> dict[str, dict[str, Any]]:
    """Records by ``pk``: ``folder/name/*.json`` (one per file), ``name.json`` (a list) or
    ``name.jsonl``."""
    out: dict[str, dict[str, Any]] = {}
    items: list[Any] = []
    if (folder / name).is_dir():
        items = [_read(f) for f in sorted((folder / name).glob("*.json"))]
    elif (folder / f"{name}.json").is_file():
        items = _read(folder / f"{name}.json")
    elif (folder / f"{name}.jsonl").is_file():
        lines = (folder / f"{name}.jsonl").read_text().splitlines()
        try:
            items = [json.loads(line) for line in lines if line.strip()]
        except json.JSONDecodeError as err:
            raise ScenarioError(f"{folder / name}.jsonl: a line is not JSON ({err})") from None
    else:
        raise ScenarioError(f"{folder}: no {name}/ folder, {name}.json or {name}.jsonl")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and item.get("pk"):
            out[str(item["pk"])] = dict(item)
    if not out:
        raise ScenarioError(f"{folder}: {name}: no records with a 'pk'")
    return out


def _tasks(folder: Path, split: str) -> list[dict[str, Any]]:
    if split not in TASK_FILES:
        raise ScenarioError(f"split {split!r}; choose one of: {', '.join(TASK_FILES)}")
    for candidate in (folder / TASK_FILES[split], folder / "data" / TASK_FILES[split]):
        if candidate.is_file():
            tasks = _read(candidate)
            if not isinstance(tasks, list):
                raise ScenarioError(f"{candidate}: expected a list of tasks")
            return tasks
    raise ScenarioError(f"{folder}: no {TASK_FILES[split]} (the task list of split {split!r})")


def _public_character(agent: Mapping[str, Any], goal: str, where: str) -> dict[str, Any]:
    name = f"{agent.get('first_name', '')} {agent.get('last_name', '')}".strip()
    if not name:
        raise ScenarioError(f"{where}: first_name: missing")
    personality = str(agent.get("personality_and_values") or agent.get("big_five") or "")
    values = ", ".join(
        str(v)
        for key in ("moral_values", "schwartz_personal_values")
        for v in (agent.get(key) or [])
    )
    secret = str(agent.get("secret") or "")
    goal = re.sub(r"<extra_info>.*?</extra_info>", "", goal, flags=re.S).strip()
    goal = re.sub(r"</?\w+>", "", goal).strip()
    return {
        "name": name,
        "age": int(agent.get("age") or 0),
        "occupation": str(agent.get("occupation") or "person"),
        "personality": personality,
        "values": values,
        "secret": secret,
        "goal": goal,
        "goal_keywords": list(keywords(goal) or ("agree",)),
        "secret_words": list(keywords(secret, 3)),
    }


def load_public(folder: str | Path, split: str = "hard") -> dict[str, Any]:
    """The tasks of a public Sotopia split in the project's format (a dict ready to dump):
    every task is one scenario of the test split, named after its environment's codename."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ScenarioError(f"{folder}: not a folder")
    envs = _records(folder, "EnvironmentProfile")
    agents = _records(folder, "AgentProfile")
    scenarios = []
    for i, task in enumerate(_tasks(folder, split)):
        where = f"{folder}: task #{i + 1}"
        env_id = task.get("env_id") if isinstance(task, Mapping) else None
        ids = task.get("agent_ids") if isinstance(task, Mapping) else None
        if env_id not in envs:
            raise ScenarioError(f"{where}: env_id: {env_id!r} is not an environment profile")
        env = envs[env_id]
        codename = str(env.get("codename") or task.get("codename") or env_id)
        where = f"{folder}: scenario {codename!r} (task #{i + 1})"
        if not isinstance(ids, list) or len(ids) != 2:
            raise ScenarioError(f"{where}: agent_ids: expected two agent ids")
        for agent_id in ids:
            if agent_id not in agents:
                raise ScenarioError(f"{where}: agent_ids: {agent_id!r} is not an agent profile")
        goals = env.get("agent_goals")
        if not isinstance(goals, list) or len(goals) < 2 or not all(goals[:2]):
            raise ScenarioError(f"{where}: agent_goals: expected two goals")
        if not env.get("scenario"):
            raise ScenarioError(f"{where}: scenario: missing")
        relationship = env.get("relationship", 0)
        scenarios.append(
            {
                "id": f"{codename}-{i + 1}",
                "split": "test",
                "category": str(env.get("source") or task.get("source") or "sotopia"),
                "setting": str(env["scenario"]),
                "relationship": RELATIONSHIPS.get(relationship, str(relationship)),
                "characters": [
                    _public_character(agents[a], str(g), f"{where}, agent {a!r}")
                    for a, g in zip(ids, goals[:2], strict=True)
                ],
            }
        )
    parse_scenarios({"scenarios": scenarios}, str(folder))  # the same checks as a user file
    return {"scenarios": scenarios}


__all__ = [
    "BUILTIN",
    "CATEGORIES",
    "Character",
    "Scenario",
    "ScenarioError",
    "keywords",
    "load_public",
    "load_scenarios",
    "parse_scenarios",
    "select",
]
