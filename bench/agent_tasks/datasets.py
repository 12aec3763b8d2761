"""The benchmark's datasets, generated with a fixed seed: the same bytes on every machine with the
same pandas. Clean and messy CSVs (nulls, dates, duplicates, inconsistent labels), a SQLite
database, and a small parquet file where pyarrow is installed."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20261126
FOLDER = "data"  # under the server's root, beside the task notebooks


def has_parquet() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _sales(rng: np.random.Generator) -> pd.DataFrame:
    n = 600
    dates = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 366, n), unit="D")
    return pd.DataFrame(
        {
            "order_id": np.arange(1001, 1001 + n),
            "date": dates.strftime("%Y-%m-%d"),
            "region": rng.choice(["North", "South", "East", "West"], n, p=[0.35, 0.25, 0.25, 0.15]),
            "product": rng.choice(["Apple", "Banana", "Cherry", "Date", "Elderberry"], n),
            "units": rng.integers(1, 40, n),
            "unit_price": np.round(rng.uniform(0.5, 12.0, n), 2),
            "customer_id": rng.integers(1, 121, n),
        }
    )


def _messy(sales: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    messy = sales.copy()
    messy["units"] = messy["units"].astype("float")
    messy.loc[rng.choice(messy.index, 45, replace=False), "units"] = np.nan
    messy.loc[rng.choice(messy.index, 30, replace=False), "unit_price"] = np.nan
    messy.loc[rng.choice(messy.index, 20, replace=False), "date"] = None
    odd = rng.choice(messy.index, 60, replace=False)
    messy.loc[odd, "region"] = [
        f" {r.lower()} " if i % 2 else r.upper() for i, r in enumerate(messy.loc[odd, "region"])
    ]
    duplicates = messy.loc[rng.choice(messy.index, 25, replace=False)]
    return pd.concat([messy, duplicates]).sample(frac=1.0, random_state=SEED).reset_index(drop=True)


def _sensors(rng: np.random.Generator) -> pd.DataFrame:
    hours = pd.date_range("2024-03-01", periods=24 * 21, freq="h")
    frames = []
    for k, sensor in enumerate(["s1", "s2", "s3"]):
        base = 18 + 3 * k + 4 * np.sin(np.arange(len(hours)) * 2 * np.pi / 24)
        temperature = np.round(base + rng.normal(0, 0.8, len(hours)), 2)
        humidity = np.round(rng.uniform(30, 70, len(hours)), 1)
        frame = pd.DataFrame(
            {
                "timestamp": hours.strftime("%Y-%m-%d %H:%M"),
                "sensor": sensor,
                "temperature": temperature,
                "humidity": humidity,
            }
        )
        frame.loc[rng.choice(frame.index, 12, replace=False), "temperature"] = np.nan
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _employees(rng: np.random.Generator) -> pd.DataFrame:
    n = 150
    departments = rng.choice(
        ["Engineering", "Sales", "Support", "Finance", "Legal"], n, p=[0.4, 0.25, 0.15, 0.12, 0.08]
    )
    base = {"Engineering": 85000, "Sales": 60000, "Support": 45000, "Finance": 70000, "Legal": 90000}
    age = rng.integers(22, 64, n)
    salary = np.array([base[d] for d in departments]) + (age - 22) * 900 + rng.normal(0, 6000, n)
    return pd.DataFrame(
        {
            "employee_id": np.arange(1, n + 1),
            "department": departments,
            "age": age,
            "salary": np.round(salary, 0).astype(int),
            "hire_date": (pd.Timestamp("2010-01-01") + pd.to_timedelta(rng.integers(0, 5000, n), unit="D")).strftime(
                "%Y-%m-%d"
            ),
            "remote": rng.choice([True, False], n, p=[0.3, 0.7]),
        }
    )


def _shop(path: Path, rng: np.random.Generator) -> None:
    cities = ["Lyon", "Porto", "Graz", "Turku", "Cork"]
    customers = pd.DataFrame(
        {
            "id": np.arange(1, 81),
            "name": [f"customer_{i:02d}" for i in range(1, 81)],
            "city": rng.choice(cities, 80),
            "signup_date": (pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 700, 80), unit="D")).strftime(
                "%Y-%m-%d"
            ),
        }
    )
    orders = pd.DataFrame(
        {
            "id": np.arange(1, 401),
            "customer_id": rng.integers(1, 81, 400),
            "order_date": (pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 300, 400), unit="D")).strftime(
                "%Y-%m-%d"
            ),
            "amount": np.round(rng.gamma(2.0, 40.0, 400), 2),
            "status": rng.choice(["paid", "refunded", "pending"], 400, p=[0.8, 0.08, 0.12]),
        }
    )
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as connection:
        customers.to_sql("customers", connection, index=False)
        orders.to_sql("orders", connection, index=False)
    connection.close()


def _measurements(rng: np.random.Generator) -> pd.DataFrame:
    n = 300
    group = rng.choice(["control", "treated"], n)
    value = np.round(rng.normal(10, 2, n) + (group == "treated") * 1.5, 3)
    return pd.DataFrame(
        {"id": np.arange(n), "group": group, "value": value, "weight": np.round(rng.uniform(0.5, 2, n), 2)}
    )


def generate(root: Path) -> list[str]:
    """Write every dataset under `root`/data; the files written, relative to `root`."""
    rng = np.random.default_rng(SEED)
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    sales = _sales(rng)
    written = {
        "sales.csv": lambda p: sales.to_csv(p, index=False),
        "sales_messy.csv": lambda p: _messy(sales, rng).to_csv(p, index=False),
        "sensors.csv": lambda p: _sensors(rng).to_csv(p, index=False),
        "employees.csv": lambda p: _employees(rng).to_csv(p, index=False),
        "shop.sqlite": lambda p: _shop(p, rng),
    }
    measurements = _measurements(rng)  # drawn whether or not it is written: the other files stay the same
    if has_parquet():
        written["measurements.parquet"] = lambda p: measurements.to_parquet(p, index=False)
    for name, write in written.items():
        write(folder / name)
    return [f"{FOLDER}/{name}" for name in written]
