"""A generated workspace of documents for the knowledge tests and bench: Markdown, reST, text,
notebooks and Python modules on many topics, a few of which mention churn in passing, and one
(docs/metrics/churn.md) that says how churn is computed."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

TOPICS = [
    "invoice",
    "shipment",
    "warehouse",
    "forecast",
    "campaign",
    "refund",
    "ledger",
    "payroll",
    "inventory",
    "supplier",
    "contract",
    "pricing",
    "discount",
    "subscription",
    "onboarding",
    "support",
    "ticket",
    "survey",
    "retention",
    "fraud",
    "latency",
    "cluster",
    "pipeline",
    "schema",
    "backfill",
    "dashboard",
    "alerting",
    "quota",
    "sampling",
    "embedding",
]
FILLER = (
    "The team reviews this every week. Numbers come from the warehouse tables and are checked by an analyst. "
    "Ask in the data channel when something looks wrong."
)
EXPECTED = "docs/metrics/churn.md"
CHURN = """# Metrics

## Churn rate

How we compute churn: the number of customers who cancelled during the month divided by the number of
active customers on the first day of that month. Reactivations within 30 days do not count as churn.
The query lives in `queries/churn.sql`.
"""


def _paragraph(rng: random.Random, topic: str) -> str:
    words = rng.sample(TOPICS, 4)
    return f"This note covers the {topic} process and its {words[0]}, {words[1]} and {words[2]} steps. {FILLER}"


def write_corpus(root: Path, count: int = 200, seed: int = 7) -> dict[int, str]:
    """`count` documents under `root` (EXPECTED among them); returns number -> relative path."""
    rng = random.Random(seed)
    paths: dict[int, str] = {}
    (root / "docs" / "metrics").mkdir(parents=True, exist_ok=True)
    (root / EXPECTED).write_text(CHURN)
    paths[0] = EXPECTED
    for number in range(1, count):
        topic = TOPICS[number % len(TOPICS)]
        kind = number % 5
        folder = root / "docs" / topic
        folder.mkdir(parents=True, exist_ok=True)
        body = _paragraph(rng, topic) + (" Customer churn is reported elsewhere." if number % 17 == 0 else "")
        if kind == 0:
            rel = f"docs/{topic}/note_{number}.md"
            text = f"# {topic.title()} {number}\n\n## Details\n\n{body}\n"
        elif kind == 1:
            rel = f"docs/{topic}/page_{number}.rst"
            title = f"{topic.title()} page {number}"
            text = f"{title}\n{'=' * len(title)}\n\n{body}\n"
        elif kind == 2:
            rel = f"docs/{topic}/readme_{number}.txt"
            text = body + "\n"
        elif kind == 3:
            rel = f"docs/{topic}/analysis_{number}.ipynb"
            cells = [
                {"cell_type": "markdown", "metadata": {}, "source": [f"# {topic.title()} analysis {number}\n", body]},
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": f"{topic}_df = load('{topic}')",
                    "outputs": [],
                    "execution_count": None,
                },
            ]
            text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        else:
            rel = f"docs/{topic}/module_{number}.py"
            text = f'"""{topic.title()} helpers {number}.\n\n{body}\n"""\n\n\ndef run_{topic}():\n    """Run the {topic} job."""\n'
        (root / rel).write_text(text)
        paths[number] = rel
    return paths


def write_database(path: Path, tables: int = 30) -> None:
    """A SQLite database of `tables` tables with comments in their names and columns; `customers`,
    `subscriptions` and `cancellations` are what a churn question needs."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, signup_date TEXT, region TEXT);
        CREATE TABLE subscriptions (subscription_id INTEGER PRIMARY KEY, customer_id INTEGER, plan TEXT,
                                    started_at TEXT, monthly_price REAL);
        CREATE TABLE cancellations (cancellation_id INTEGER PRIMARY KEY, subscription_id INTEGER,
                                    cancelled_at TEXT, reason TEXT);
        """
    )
    db.executemany(
        "INSERT INTO customers VALUES (?, ?, ?, ?)", [(i, f"c{i}", "2024-01-01", "eu") for i in range(1, 51)]
    )
    db.executemany("INSERT INTO subscriptions VALUES (?, ?, 'pro', '2024-01-01', 10.0)", [(i, i) for i in range(1, 51)])
    db.executemany("INSERT INTO cancellations VALUES (?, ?, '2024-02-10', 'price')", [(i, i) for i in range(1, 6)])
    others = [t for t in TOPICS if t not in ("subscription", "retention")]
    for number in range(tables - 3):
        topic = others[number % len(others)]
        db.execute(
            f"CREATE TABLE {topic}_facts_{number} (id INTEGER PRIMARY KEY, {topic}_code TEXT, amount REAL, recorded_on TEXT)"
        )
    db.commit()
    db.close()
