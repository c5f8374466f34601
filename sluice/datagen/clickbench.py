"""A ClickBench-style ``hits`` table: the 105 columns of ClickBench's ``hits`` (names and SQL
types of its ``create.sql``), seeded, with the skew that its 43 queries meet in the real data.

No package here ships the real ``hits.parquet`` (14 GB of Yandex.Metrica web analytics), so
this writes a stand-in. What is like the real file:

- the columns, their order and types (BIGINT/INTEGER/SMALLINT as int64/int32/int16, TEXT as
  UTF-8 strings, CHAR(1) as a one-character string);
- skew: ``UserID`` and ``CounterID`` follow Zipf-like laws (a few users and counters hold
  most hits; counter 62, which queries 36-42 filter on, is the second largest), ``SearchPhrase``
  is empty in about 87 % of the hits, ``AdvEngineID`` non-zero in about 2 %,
  ``MobilePhoneModel`` mostly empty, ``RegionID`` skewed over about 9,000 regions, ``URL``,
  ``Referer`` and ``Title`` drawn from skewed pools of realistic strings (some holding
  'google' / 'Google');
- every constant the queries use is present: counter 62 in July 2013, the ``UserID``
  435090932899640449, the ``URLHash`` 2868770270353813622 and ``RefererHash``
  3594120000172545465 with traffic sources -1 and 6, enough distinct URLs, titles, window sizes
  and minutes behind counter 62 that the OFFSET queries (38-42) return rows at 10 M hits, and
  counters with over 100,000 hits for queries 27-28.

What is not: ``EventTime``, ``ClientEventTime`` and ``LocalEventTime`` are Parquet timestamps
(seconds) and ``EventDate`` a Parquet date, where the public ``hits.parquet`` stores int64 Unix
seconds and uint16 days (its queries then go through a view that converts them); strings are
UTF-8 (the public file's are binary); the values are synthetic, so absolute answers and
compression ratios differ from the real data. Row groups hold about 1 M rows, as DuckDB writes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sluice.datagen.checksums import CHECKSUM_WRITER

CLICKBENCH_TABLES = ("hits",)

#: (name, SQL type of ClickBench's create.sql) in table order.
COLUMNS: list[tuple[str, str]] = [
    ("WatchID", "BIGINT"), ("JavaEnable", "SMALLINT"), ("Title", "TEXT"), ("GoodEvent", "SMALLINT"),
    ("EventTime", "TIMESTAMP"), ("EventDate", "DATE"), ("CounterID", "INTEGER"), ("ClientIP", "INTEGER"),
    ("RegionID", "INTEGER"), ("UserID", "BIGINT"), ("CounterClass", "SMALLINT"), ("OS", "SMALLINT"),
    ("UserAgent", "SMALLINT"), ("URL", "TEXT"), ("Referer", "TEXT"), ("IsRefresh", "SMALLINT"),
    ("RefererCategoryID", "SMALLINT"), ("RefererRegionID", "INTEGER"), ("URLCategoryID", "SMALLINT"),
    ("URLRegionID", "INTEGER"), ("ResolutionWidth", "SMALLINT"), ("ResolutionHeight", "SMALLINT"),
    ("ResolutionDepth", "SMALLINT"), ("FlashMajor", "SMALLINT"), ("FlashMinor", "SMALLINT"),
    ("FlashMinor2", "TEXT"), ("NetMajor", "SMALLINT"), ("NetMinor", "SMALLINT"), ("UserAgentMajor", "SMALLINT"),
    ("UserAgentMinor", "TEXT"), ("CookieEnable", "SMALLINT"), ("JavascriptEnable", "SMALLINT"),
    ("IsMobile", "SMALLINT"), ("MobilePhone", "SMALLINT"), ("MobilePhoneModel", "TEXT"), ("Params", "TEXT"),
    ("IPNetworkID", "INTEGER"), ("TraficSourceID", "SMALLINT"), ("SearchEngineID", "SMALLINT"),
    ("SearchPhrase", "TEXT"), ("AdvEngineID", "SMALLINT"), ("IsArtifical", "SMALLINT"),
    ("WindowClientWidth", "SMALLINT"), ("WindowClientHeight", "SMALLINT"), ("ClientTimeZone", "SMALLINT"),
    ("ClientEventTime", "TIMESTAMP"), ("SilverlightVersion1", "SMALLINT"), ("SilverlightVersion2", "SMALLINT"),
    ("SilverlightVersion3", "INTEGER"), ("SilverlightVersion4", "SMALLINT"), ("PageCharset", "TEXT"),
    ("CodeVersion", "INTEGER"), ("IsLink", "SMALLINT"), ("IsDownload", "SMALLINT"), ("IsNotBounce", "SMALLINT"),
    ("FUniqID", "BIGINT"), ("OriginalURL", "TEXT"), ("HID", "INTEGER"), ("IsOldCounter", "SMALLINT"),
    ("IsEvent", "SMALLINT"), ("IsParameter", "SMALLINT"), ("DontCountHits", "SMALLINT"), ("WithHash", "SMALLINT"),
    ("HitColor", "CHAR"), ("LocalEventTime", "TIMESTAMP"), ("Age", "SMALLINT"), ("Sex", "SMALLINT"),
    ("Income", "SMALLINT"), ("Interests", "SMALLINT"), ("Robotness", "SMALLINT"), ("RemoteIP", "INTEGER"),
    ("WindowName", "INTEGER"), ("OpenerName", "INTEGER"), ("HistoryLength", "SMALLINT"),
    ("BrowserLanguage", "TEXT"), ("BrowserCountry", "TEXT"), ("SocialNetwork", "TEXT"), ("SocialAction", "TEXT"),
    ("HTTPError", "SMALLINT"), ("SendTiming", "INTEGER"), ("DNSTiming", "INTEGER"), ("ConnectTiming", "INTEGER"),
    ("ResponseStartTiming", "INTEGER"), ("ResponseEndTiming", "INTEGER"), ("FetchTiming", "INTEGER"),
    ("SocialSourceNetworkID", "SMALLINT"), ("SocialSourcePage", "TEXT"), ("ParamPrice", "BIGINT"),
    ("ParamOrderID", "TEXT"), ("ParamCurrency", "TEXT"), ("ParamCurrencyID", "SMALLINT"),
    ("OpenstatServiceName", "TEXT"), ("OpenstatCampaignID", "TEXT"), ("OpenstatAdID", "TEXT"),
    ("OpenstatSourceID", "TEXT"), ("UTMSource", "TEXT"), ("UTMMedium", "TEXT"), ("UTMCampaign", "TEXT"),
    ("UTMContent", "TEXT"), ("UTMTerm", "TEXT"), ("FromTag", "TEXT"), ("HasGCLID", "SMALLINT"),
    ("RefererHash", "BIGINT"), ("URLHash", "BIGINT"), ("CLID", "INTEGER"),
]
ARROW = {"BIGINT": pa.int64(), "INTEGER": pa.int32(), "SMALLINT": pa.int16(), "TEXT": pa.string(),
         "CHAR": pa.string(), "TIMESTAMP": pa.timestamp("s"), "DATE": pa.date32()}

USER = 435090932899640449
URL_HASH = 2868770270353813622
REFERER_HASH = 3594120000172545465
COUNTER = 62
ROW_GROUP = 1 << 20

_SITES = ["google.com", "yandex.ru", "mail.ru", "vk.com", "avito.ru", "auto.ru", "rambler.ru", "livejournal.com",
          "youtube.com", "wikipedia.org", "odnoklassniki.ru", "kinopoisk.ru", "images.google.ru", "maps.google.com",
          "news.yandex.ru", "market.yandex.ru", "irr.ru", "hh.ru", "lenta.ru", "rbc.ru"]
_WORDS = ["купить", "авто", "погода", "москва", "смотреть", "онлайн", "бесплатно", "фильм", "скачать", "цены",
          "квартиры", "новости", "google", "карта", "игры", "музыка", "работа", "отзывы", "телефон", "сериал"]
_MODELS = ["iPad", "iPhone", "GT-I9300", "HTC One", "Lumia 920", "Nexus 4", "GT-N7100", "Xperia Z", "A500",
           "iPod Touch"]


def _zipf_index(rng: np.random.Generator, n: int, size: int, a: float = 1.3) -> np.ndarray:
    """Indexes 0..size-1, skewed: index 0 most frequent (a Zipf law, folded into the range)."""
    return (rng.zipf(a, n) - 1) % size


def _url(rng, i):
    site = _SITES[i % len(_SITES)] if i % 7 else _SITES[int(rng.integers(len(_SITES)))]
    path = "/".join(_WORDS[int(w)] for w in rng.integers(0, len(_WORDS), int(rng.integers(1, 4))))
    return f"http://{'www.' if i % 3 == 0 else ''}{site}/{path}?id={i}"


def _title(rng, i):
    words = " ".join(_WORDS[int(w)] for w in rng.integers(0, len(_WORDS), int(rng.integers(2, 6))))
    return f"{words} — {'Google' if i % 11 == 0 else 'Яндекс' if i % 5 == 0 else 'Поиск'} #{i}"


def _phrase(rng, i):
    return " ".join(_WORDS[int(w)] for w in rng.integers(0, len(_WORDS), int(rng.integers(1, 4)))) + f" {i % 997}"


def _strings(pool: np.ndarray, idx: np.ndarray) -> pa.Array:
    """``pool[idx]`` as a plain string array (built through a dictionary: no Python per row)."""
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), pa.array(list(pool), pa.string())
                                          ).cast(pa.string())


def _batch(rng: np.random.Generator, n: int, start: int, pools: dict) -> pa.Table:
    """``n`` hits, as one table in the column order of :data:`COLUMNS`."""
    col: dict[str, object] = {}
    # Counters: a Zipf law over 10,000 counters, counter 62 taking rank 2 (the real data's 62 is big).
    rank = _zipf_index(rng, n, 10_000, 1.2)
    counters = np.where(rank == 0, 1_704, np.where(rank == 1, COUNTER, 100 + rank * 37)).astype(np.int32)
    col["CounterID"] = counters
    july = dt.datetime(2013, 7, 1, tzinfo=dt.timezone.utc).timestamp()
    t = (july + rng.integers(0, 31 * 86_400, n)).astype(np.int64)
    col["EventTime"] = t
    col["EventDate"] = ((t // 86_400)).astype(np.int32)
    col["ClientEventTime"] = t + rng.integers(-3_600, 3_600, n)
    col["LocalEventTime"] = t + rng.integers(-10_800, 10_800, n)
    users = _zipf_index(rng, n, 2_000_000, 1.15).astype(np.int64)
    col["UserID"] = np.where(users == 3, USER, users * 2_654_435_761 + 1_000_003)
    col["WatchID"] = (np.arange(start, start + n, dtype=np.int64) * 6_364_136_223_846_793_005) & ((1 << 62) - 1)
    col["ClientIP"] = (users * 7_919 % 2_000_000_000).astype(np.int32) - (rng.integers(0, 3, n) == 0)
    col["RegionID"] = (_zipf_index(rng, n, 9_000, 1.25) + 1).astype(np.int32)
    col["AdvEngineID"] = np.where(rng.random(n) < 0.02, rng.integers(1, 60, n), 0).astype(np.int16)
    col["ResolutionWidth"] = rng.choice(np.array([1024, 1280, 1366, 1440, 1600, 1920, 320, 768, 0], np.int16), n)
    col["ResolutionHeight"] = rng.choice(np.array([768, 800, 900, 1024, 1080, 480, 0], np.int16), n)
    col["WindowClientWidth"] = rng.integers(0, 2_000, n).astype(np.int16)
    col["WindowClientHeight"] = rng.integers(0, 1_200, n).astype(np.int16)
    col["IsRefresh"] = (rng.random(n) < 0.1).astype(np.int16)
    col["DontCountHits"] = (rng.random(n) < 0.05).astype(np.int16)
    col["IsLink"] = (rng.random(n) < 0.08).astype(np.int16)
    col["IsDownload"] = (rng.random(n) < 0.02).astype(np.int16)
    col["TraficSourceID"] = rng.choice(np.array([-1, 0, 1, 2, 3, 5, 6, 7, 8], np.int16), n)
    col["SearchEngineID"] = np.where(rng.random(n) < 0.15, rng.integers(1, 30, n), 0).astype(np.int16)
    has_phrase = rng.random(n) < 0.13
    col["SearchPhrase"] = np.where(has_phrase, 1 + _zipf_index(rng, n, len(pools["phrase"]) - 1, 1.1), 0)
    mobile = rng.random(n) < 0.1
    col["IsMobile"] = mobile.astype(np.int16)
    col["MobilePhone"] = np.where(mobile, rng.integers(1, 10, n), 0).astype(np.int16)
    col["MobilePhoneModel"] = np.where(mobile, 1 + rng.integers(0, len(_MODELS), n), 0)
    col["URL"] = _zipf_index(rng, n, len(pools["url"]), 1.05)
    col["Title"] = _zipf_index(rng, n, len(pools["title"]), 1.05)
    col["Referer"] = np.where(rng.random(n) < 0.3, 0, _zipf_index(rng, n, len(pools["url"]) - 1, 1.1) + 1)
    # Counter 62's hits carry the hashes queries 40-41 look for, in part of its rows.
    is62 = counters == COUNTER
    col["URLHash"] = np.where(is62 & (rng.random(n) < 0.2), URL_HASH, col["URL"].astype(np.int64) * 1_000_003 + 7)
    col["RefererHash"] = np.where(is62 & (rng.random(n) < 0.3), REFERER_HASH,
                                  col["Referer"].astype(np.int64) * 999_983 + 11)
    for name, sql in COLUMNS:
        if name in col:
            continue
        if sql in ("SMALLINT",):
            col[name] = rng.integers(0, 3, n).astype(np.int16)
        elif sql == "INTEGER":
            col[name] = rng.integers(0, 1_000, n).astype(np.int32)
        elif sql == "BIGINT":
            col[name] = rng.integers(0, 1 << 40, n).astype(np.int64)
        elif sql == "CHAR":
            col[name] = rng.integers(0, 3, n)
        else:  # other TEXT columns: mostly empty, a few small values
            col[name] = np.where(rng.random(n) < 0.9, 0, rng.integers(1, len(pools["misc"]), n))
    arrays = []
    for name, sql in COLUMNS:
        v = col[name]
        if name in ("URL", "Referer", "OriginalURL"):
            arrays.append(_strings(pools["url"], v if name != "OriginalURL" else col["URL"]))
        elif name == "Title":
            arrays.append(_strings(pools["title"], v))
        elif name == "SearchPhrase":
            arrays.append(_strings(pools["phrase"], v))
        elif name == "MobilePhoneModel":
            arrays.append(_strings(pools["model"], v))
        elif sql == "CHAR":
            arrays.append(_strings(np.array(["D", "E", "F"], dtype=object), v))
        elif sql == "TEXT":
            arrays.append(_strings(pools["misc"], v))
        elif sql == "TIMESTAMP":
            arrays.append(pa.array(v, pa.int64()).cast(pa.timestamp("s")))
        elif sql == "DATE":
            arrays.append(pa.array(v, pa.int32()).cast(pa.date32()))
        else:
            arrays.append(pa.array(np.asarray(v).astype(ARROW[sql].to_pandas_dtype()), ARROW[sql]))
    return pa.Table.from_arrays(arrays, names=[n for n, _ in COLUMNS])


def generate_clickbench(rows: int, out: str | Path, seed: int = 42) -> Path:
    """Write ``out/hits.parquet`` with ``rows`` hits; returns its path."""
    if rows < 1:
        raise ValueError("rows must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    pools = {
        "url": np.array([""] + [_url(rng, i) for i in range(1, 50_000)], dtype=object),
        "title": np.array([""] + [_title(rng, i) for i in range(1, 30_000)], dtype=object),
        "phrase": np.array([""] + [_phrase(rng, i) for i in range(1, 40_000)], dtype=object),
        "model": np.array([""] + _MODELS, dtype=object),
        "misc": np.array(["", "ru", "en", "utf-8", "windows-1251", "yandex", "google", "cpc", "email", "vk"],
                         dtype=object),
    }
    path = out / "hits.parquet"
    tmp = out / ".hits.parquet.tmp"
    schema = pa.schema([pa.field(n, ARROW[t]) for n, t in COLUMNS])
    with pq.ParquetWriter(tmp, schema, compression="snappy", **CHECKSUM_WRITER) as w:
        done = 0
        while done < rows:
            n = min(ROW_GROUP, rows - done)
            w.write_table(_batch(rng, n, done, pools), row_group_size=ROW_GROUP)
            done += n
    tmp.replace(path)
    return path
