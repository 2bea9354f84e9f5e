"""Ingest of Amazon Reviews 2023 JSONL: typed output, bad-record reasons, both policies.

Inline data only. Golden values are stated in the tests (review_id is sha1 of
``user_id \\x1f parent_asin \\x1f timestamp``, first 16 hex digits).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from personalir.data.ingest import ingest_meta, ingest_reviews, require_records
from personalir.data.ingest_schema import (
    META_SCHEMA,
    REASONS,
    REVIEW_SCHEMA,
    IngestError,
    review_id,
)

# ---------------------------------------------------------------------------------------------
# Review fixtures


def review(i: int, **over) -> dict:
    rec = {
        "rating": float(1 + i % 5),
        "title": f"title {i}",
        "text": f"Review text number {i}. It works.",
        "images": [],
        "asin": f"A{i:05d}",
        "parent_asin": f"P{i % 3:05d}",
        "user_id": f"U{i:05d}",
        "timestamp": 1_600_000_000_000 + i,
        "helpful_vote": i % 4,
        "verified_purchase": i % 2 == 0,
    }
    rec.update(over)
    return rec


def line(rec) -> bytes:
    return json.dumps(rec, ensure_ascii=False).encode() + b"\n"


def without(rec: dict, key: str) -> dict:
    return {k: v for k, v in rec.items() if k != key}


def good_line(i: int) -> bytes:
    return line(review(i))


# (kind, bad line, reason). The "duplicate" line repeats good_line(DUP_OF) and the
# "truncated" one must be the file's last line (it has no newline).
DUP_OF = 100
BAD_REVIEWS = [
    ("invalid_json", b'{"rating": 5.0, "text": "cut here"\n', "invalid_json"),
    ("nan_literal", line(review(1)).replace(b'"rating": 2.0', b'"rating": NaN'), "invalid_json"),
    ("bad_utf8", line(review(2)).replace(b"It works", b"It \xff\xfe works"), "invalid_utf8"),
    ("nul_byte", line(review(3)).replace(b'", "images"', b'"\x00, "images"'), "nul_byte"),
    ("blank_line", b"\n", "blank_line"),
    ("whitespace_line", b"  \t \r\n", "blank_line"),
    ("json_array", b"[1, 2, 3]\n", "not_an_object"),
    ("json_number", b"42\n", "not_an_object"),
    ("json_string", b'"just a string"\n', "not_an_object"),
    ("lone_surrogate", line(review(4)).replace(b"It works", b"It \\ud800 works"), "lone_surrogate"),
    ("missing_user_id", line(without(review(5), "user_id")), "missing_field"),
    ("null_text", line(review(6, text=None)), "missing_field"),
    ("rating_five", line(review(7, rating="five")), "wrong_type"),
    ("rating_bool", line(review(8, rating=True)), "wrong_type"),
    ("timestamp_yesterday", line(review(9, timestamp="yesterday")), "wrong_type"),
    ("timestamp_float", line(review(10, timestamp=1.6e12)), "wrong_type"),
    ("verified_yes", line(review(11, verified_purchase="yes")), "wrong_type"),
    ("images_not_list", line(review(12, images="none")), "wrong_type"),
    ("helpful_vote_float", line(review(13, helpful_vote=2.5)), "wrong_type"),
    ("user_id_int", line(review(14, user_id=12345)), "wrong_type"),
    ("rating_seven", line(review(15, rating=7)), "out_of_range"),
    ("rating_zero", line(review(16, rating=0)), "out_of_range"),
    ("helpful_vote_negative", line(review(17, helpful_vote=-1)), "out_of_range"),
    ("timestamp_zero", line(review(18, timestamp=0)), "out_of_range"),
    ("timestamp_negative", line(review(19, timestamp=-5)), "out_of_range"),
    ("text_empty", line(review(20, text="")), "empty_text"),
    ("text_whitespace", line(review(21, text=" \n\t  ")), "empty_text"),
    ("parent_asin_empty", line(review(22, parent_asin="")), "empty_id"),
    ("user_id_blank", line(review(23, user_id="   ")), "empty_id"),
    ("timestamp_seconds", line(review(25, timestamp=1_600_000_000)), "implausible_timestamp"),
    ("timestamp_2096", line(review(26, timestamp=4_000_000_000_000)), "implausible_timestamp"),
    ("timestamp_1990", line(review(27, timestamp=640_000_000_000)), "implausible_timestamp"),
    ("rating_half_star", line(review(28, rating=4.5)), "non_integral_rating"),
    ("title_blank", line(review(29, title=" \t ")), "empty_title"),
    ("title_empty", line(review(30, title="")), "empty_title"),
    ("title_zero_width", line(review(31, title="\u200b\u200b")), "empty_title"),
    ("text_zero_width", line(review(32, text="\u200b \ufeff\u2060")), "empty_text"),
    ("text_unicode_spaces", line(review(33, text="\u00a0\u3000\u2028")), "empty_text"),
    (
        "duplicate_key",
        good_line(34).replace(b'{"rating": 5.0', b'{"rating": 1.0, "rating": 5.0'),
        "duplicate_key",
    ),
    (
        "duplicate_key_spaced",
        good_line(35).replace(b'{"rating": 1.0', b'{"rating" : 4.0, "rating": 1.0'),
        "duplicate_key",
    ),
    (
        "duplicate_key_nested",
        line(review(36, images=[{"url": "a"}])).replace(
            b'{"url": "a"}', b'{"url": "a", "url": "b"}'
        ),
        "duplicate_key",
    ),
    (
        "duplicate_key_escaped_colon",
        line(review(42, text="at 10:30"))
        .replace(b"10:30", b"10\\u003a30")
        .replace(b'{"rating": 3.0', b'{"rating": 2.0, "rating": 3.0'),
        "duplicate_key",
    ),
    ("user_id_space", line(review(37, user_id="U 37")), "bad_id"),
    ("parent_asin_slash", line(review(38, parent_asin="P/38")), "bad_id"),
    ("asin_tab", line(review(39, asin="A\t39")), "bad_id"),
    ("user_id_control", line(review(40, user_id="U\x0140")), "bad_id"),
    ("user_id_zero_width", line(review(43, user_id="U\u200b43")), "bad_id"),
    ("parent_asin_zero_width_joiner", line(review(44, parent_asin="P\u200d44")), "bad_id"),
    ("asin_byte_order_mark", line(review(45, asin="A\ufeff45")), "bad_id"),
    ("user_id_nul", line(review(46, user_id="U\x0046")), "bad_id"),
    ("parent_asin_word_joiner", line(review(47, parent_asin="P\u206047")), "bad_id"),
    ("line_too_long", line(review(41, text="long " * 220_000)), "line_too_long"),
    ("duplicate", good_line(DUP_OF), "duplicate_review"),
    ("truncated_final_line", good_line(24)[:40], "truncated_final_line"),
]
# Every reason a line can have is in the corpus (the file-level ones are tested below).
assert {reason for _, _, reason in BAD_REVIEWS} == set(REASONS) - {"duplicate_product"}


#: Quarantine tests that mix many bad lines switch the quarantine-rate guard off.
LENIENT = {"max_quarantine_fraction": 1.0}


def write(path, data: bytes):
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------
# Strict: each kind alone at a known line


@pytest.mark.parametrize(("kind", "bad", "reason"), BAD_REVIEWS, ids=[k for k, _, _ in BAD_REVIEWS])
def test_strict_names_file_line_and_reason(tmp_path, kind, bad, reason):
    body = good_line(DUP_OF) + good_line(101) + bad
    if kind != "truncated_final_line":
        body += good_line(102)
    src = write(tmp_path / "reviews.jsonl", body)
    out = tmp_path / "reviews.parquet"
    with pytest.raises(IngestError) as info:
        ingest_reviews(src, out, policy="strict")
    err = info.value
    assert (err.file, err.line, err.reason) == ("reviews.jsonl", 3, reason)
    assert str(err).startswith(f"reviews.jsonl:3: {reason}: ")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]  # no temp files left behind


def test_invisible_characters_in_text_are_kept_and_counted(tmp_path):
    """NUL and zero-width characters inside a review's text or title are not an error (the
    text is the user's), but every record holding one is counted per field."""
    body = (
        good_line(0)
        + line(review(1, text="good\u200bstrap"))
        + line(review(2, text="nul\x00 inside", title="a\u2060title"))
        + good_line(3)
    )
    src = write(tmp_path / "r.jsonl", body)
    report = ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    assert report["records_written"] == 4
    assert report["invisible_characters"] == {"title": 1, "text": 2}


def test_strict_missing_field_message(tmp_path):
    src = write(tmp_path / "reviews.jsonl", good_line(0) + line(without(review(1), "user_id")))
    with pytest.raises(
        IngestError, match=r"^reviews\.jsonl:2: missing_field: 'user_id' is required"
    ):
        ingest_reviews(src, tmp_path / "out.parquet", policy="strict")


def test_strict_clean_file_writes_everything(tmp_path):
    src = write(tmp_path / "r.jsonl", b"".join(good_line(i) for i in range(5)))
    report = ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    assert report["records_written"] == 5 and report["quarantined_by_reason"] == {}
    assert not (tmp_path / "r.quarantine.jsonl").exists()


# ---------------------------------------------------------------------------------------------
# Quarantine: all kinds mixed with good records


def mixed_file(tmp_path):
    """good, bad, good, bad, ... with the truncated line last; returns path, bad line numbers."""
    parts, expected, n_good = [good_line(DUP_OF)], {}, 1
    for j, (kind, bad, reason) in enumerate(BAD_REVIEWS):
        if kind == "truncated_final_line":
            continue
        parts.append(bad)
        expected[len(parts)] = (reason, bad)
        parts.append(good_line(200 + j))
        n_good += 1
    kind, bad, reason = BAD_REVIEWS[-1]
    assert kind == "truncated_final_line"
    parts.append(bad)
    expected[len(parts)] = (reason, bad)
    return write(tmp_path / "mixed.jsonl", b"".join(parts)), expected, n_good, len(parts)


def test_quarantine_counts_every_kind(tmp_path):
    src, expected, n_good, n_lines = mixed_file(tmp_path)
    out, qpath, rpath = tmp_path / "m.parquet", tmp_path / "q.jsonl", tmp_path / "report.json"
    report = ingest_reviews(src, out, quarantine_path=qpath, report_path=rpath, **LENIENT)

    assert report["records_read"] == n_lines
    assert report["records_written"] == n_good == pq.read_metadata(out).num_rows
    assert report["quarantined_by_reason"] == dict(Counter(r for r, _ in expected.values()))
    assert report["records_read"] == report["records_written"] + sum(
        report["quarantined_by_reason"].values()
    )
    assert json.loads(rpath.read_text()) == report
    assert report["quarantined_by_field"]["missing_field.user_id"] == 1
    assert report["quarantined_by_field"]["wrong_type.rating"] == 2

    quarantined = [json.loads(x) for x in qpath.read_text().splitlines()]
    assert {q["line"]: q["reason"] for q in quarantined} == {k: r for k, (r, _) in expected.items()}
    for q in quarantined:
        raw = expected[q["line"]][1]
        body = raw[:-1] if raw.endswith(b"\n") else raw
        assert q["file"] == "mixed.jsonl"
        if q.get("raw_truncated"):
            assert q["reason"] == "line_too_long" and len(q["raw"]) == 1024
            assert body.startswith(q["raw"].encode())
        elif q["raw_lossy"]:
            assert base64.b64decode(q["raw_base64"]) == body
            assert "\\xff" in q["raw"]
        else:
            assert q["raw"].encode() == body

    table = pq.read_table(out)
    good_lines = sorted(set(range(1, n_lines + 1)) - set(expected))
    assert table.column("source_line").to_pylist() == good_lines
    assert table.column("user_id").to_pylist()[0] == f"U{DUP_OF:05d}"


def test_default_quarantine_path(tmp_path):
    src = write(tmp_path / "r.jsonl", good_line(0) + b"[]\n")
    report = ingest_reviews(src, tmp_path / "out" / "reviews.parquet", **LENIENT)
    qpath = tmp_path / "out" / "reviews.quarantine.jsonl"
    assert report["quarantine"] == qpath.name
    assert json.loads(qpath.read_text())["reason"] == "not_an_object"


def test_unknown_fields_are_counted(tmp_path):
    src = write(tmp_path / "r.jsonl", line(review(0, extra=1)) + line(review(1, extra=2, x=3)))
    report = ingest_reviews(src, tmp_path / "r.parquet")
    assert report["unknown_fields_dropped"] == {"extra": 2, "x": 1}
    assert report["records_written"] == 2


def test_optional_fields_absent_become_null(tmp_path):
    rec = {
        k: v
        for k, v in review(0).items()
        if k in {"rating", "text", "parent_asin", "user_id", "timestamp"}
    }
    src = write(tmp_path / "r.jsonl", line(rec))
    report = ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    row = pq.read_table(tmp_path / "r.parquet").to_pylist()[0]
    assert row["asin"] is row["title"] is row["helpful_vote"] is row["images_json"] is None
    assert report["null_counts"]["verified_purchase"] == 1


def test_utf8_bom_on_first_line_is_stripped(tmp_path):
    src = write(tmp_path / "r.jsonl", b"\xef\xbb\xbf" + good_line(0) + good_line(1))
    report = ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    assert report["utf8_bom_stripped"] is True and report["records_written"] == 2


def test_empty_file_gives_typed_empty_table(tmp_path):
    src = write(tmp_path / "r.jsonl", b"")
    report = ingest_reviews(src, tmp_path / "r.parquet")
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.num_rows == 0 and table.schema.equals(REVIEW_SCHEMA)
    assert report["records_read"] == 0


def test_empty_file_is_an_error_under_strict(tmp_path):
    src = write(tmp_path / "r.jsonl", b"")
    with pytest.raises(IngestError, match=r"^r\.jsonl: empty_input: the file holds no lines"):
        ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    assert not (tmp_path / "r.parquet").exists()


def test_empty_file_is_a_reported_warning_under_quarantine(tmp_path):
    src = write(tmp_path / "r.jsonl", b"")
    report = ingest_reviews(src, tmp_path / "r.parquet")
    assert report["empty_input"] is True
    assert report["warnings"] == ["empty_input: the file holds no lines"]
    with pytest.raises(ValueError, match=r"r\.jsonl: 0 reviews; 0 line\(s\) read.*file is empty"):
        require_records(report, src)


@pytest.mark.parametrize(("n_bad", "stops"), [(1, False), (2, True)])
def test_quarantine_rate_guard(tmp_path, n_bad, stops):
    """20 lines: 1 bad is 5% (at the default limit, accepted), 2 bad are 10% (stopped)."""
    body = [good_line(i) for i in range(20 - n_bad)] + [b"[]\n"] * n_bad
    src = write(tmp_path / "r.jsonl", b"".join(body))
    if not stops:
        assert ingest_reviews(src, tmp_path / "r.parquet")["records_quarantined"] == 1
        return
    with pytest.raises(IngestError) as info:
        ingest_reviews(src, tmp_path / "r.parquet")
    assert info.value.reason == "quarantine_rate" and info.value.line is None
    assert "2 of 20 lines (10.0%)" in str(info.value) and "not_an_object: 2" in str(info.value)
    assert "first bad lines: 19, 20" in str(info.value)
    assert not (tmp_path / "r.parquet").exists() and not (tmp_path / "r.quarantine.jsonl").exists()


def test_line_size_cap_boundaries(tmp_path):
    """A line of exactly max_line_bytes (newline excluded) passes; one byte more does not,
    also as the last line without a newline; the lines after an overlong one are read."""
    base = good_line(0)
    cap = len(base) - 1
    longer = line(review(1, text="x" * 50))
    last = good_line(2)[:-1] + b" "  # cap + 1 bytes, no newline
    assert len(last) == cap + 1
    src = write(tmp_path / "r.jsonl", base + longer + last)
    report = ingest_reviews(src, tmp_path / "r.parquet", max_line_bytes=cap, **LENIENT)
    assert report["records_written"] == 1
    assert report["quarantined_by_reason"] == {"line_too_long": 2}
    details = [json.loads(x)["detail"] for x in (tmp_path / "r.quarantine.jsonl").open()]
    assert details[0] == f"{len(longer) - 1} bytes, above max_line_bytes {cap}"
    assert details[1] == f"{cap + 1} bytes, above max_line_bytes {cap}"
    report = ingest_reviews(src, tmp_path / "r2.parquet", max_line_bytes=len(longer), **LENIENT)
    assert report["quarantined_by_reason"] == {} and report["records_written"] == 3


def test_implausible_timestamp_names_the_date_and_the_likely_unit(tmp_path):
    src = write(tmp_path / "r.jsonl", line(review(0, timestamp=1_600_000_000)))
    with pytest.raises(IngestError) as info:
        ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    assert "is 1970-01-19, outside the plausible range [1995-01-01, 2030-01-01)" in str(info.value)
    assert "read as seconds it would be 2020-09-13" in str(info.value)
    late = write(tmp_path / "late.jsonl", line(review(0, timestamp=1_900_000_000_000)))
    ingest_reviews(late, tmp_path / "ok.parquet", policy="strict", max_date="2031-01-01")
    with pytest.raises(IngestError, match="2030-03-17, outside .* 2030-01-01"):
        ingest_reviews(late, tmp_path / "late.parquet", policy="strict")


@pytest.mark.parametrize(
    "raw",
    [
        # colons inside text, an escaped quote before a colon, a key spaced from its colon,
        # nested objects in images, compact separators, pretty separators
        line(review(0, text='He said: "fine": yes. Time 10:30, ratio 1:2.')),
        line(review(1, text='a \\": b', title='x": y')),
        line(review(2)).replace(b'"rating":', b'"rating" :'),
        line(review(3, images=[{"url": "https://x/y:1", "meta": {"w": 1, "h": 2}}])),
        json.dumps(review(4), separators=(",", ":")).encode() + b"\n",
        json.dumps(review(5), separators=(" , ", " : ")).encode() + b"\n",
        line(review(6, text="at 10:30")).replace(b"10:30", b"10\\u003a30"),
    ],
)
def test_duplicate_key_check_has_no_false_positives(tmp_path, raw):
    src = write(tmp_path / "r.jsonl", raw)
    assert ingest_reviews(src, tmp_path / "r.parquet", policy="strict")["records_written"] == 1


def test_rejects_unknown_policy(tmp_path):
    src = write(tmp_path / "r.jsonl", good_line(0))
    with pytest.raises(ValueError, match="policy"):
        ingest_reviews(src, tmp_path / "r.parquet", policy="lenient")


# ---------------------------------------------------------------------------------------------
# Typed schema, review_id, gzip, determinism, chunking


def test_review_schema_and_values(tmp_path):
    src = write(tmp_path / "r.jsonl", good_line(0) + good_line(7))
    ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.schema.equals(REVIEW_SCHEMA)
    assert table.schema.field("review_id").nullable is False
    assert table.schema.field("rating").type == pa.float64()
    row = table.to_pylist()[1]
    expected_id = hashlib.sha1(b"U00007\x1fP00001\x1f1600000000007").hexdigest()[:16]
    assert row == {
        "review_id": expected_id,
        "user_id": "U00007",
        "parent_asin": "P00001",
        "asin": "A00007",
        "timestamp": 1_600_000_000_007,
        "rating": 3.0,
        "title": "title 7",
        "text": "Review text number 7. It works.",
        "helpful_vote": 3,
        "verified_purchase": False,
        "images_json": "[]",
        "source_line": 2,
    }
    assert review_id("U00007", "P00001", 1_600_000_000_007) == expected_id


def test_review_images_kept_as_compact_json(tmp_path):
    images = [{"small_image_url": "https://x/s.jpg", "attachment_type": "IMAGE"}]
    src = write(tmp_path / "r.jsonl", line(review(0, images=images)))
    ingest_reviews(src, tmp_path / "r.parquet", policy="strict")
    stored = pq.read_table(tmp_path / "r.parquet").column("images_json")[0].as_py()
    assert stored == '[{"small_image_url":"https://x/s.jpg","attachment_type":"IMAGE"}]'
    assert json.loads(stored) == images


def test_gzip_input_gives_identical_parquet(tmp_path):
    src, _, _, _ = mixed_file(tmp_path)
    gz = tmp_path / "mixed.jsonl.gz"
    gz.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    plain = ingest_reviews(src, tmp_path / "plain.parquet", **LENIENT)
    packed = ingest_reviews(gz, tmp_path / "packed.parquet", **LENIENT)
    assert (tmp_path / "plain.parquet").read_bytes() == (tmp_path / "packed.parquet").read_bytes()
    assert packed["compression"] == "gzip" and plain["compression"] == "none"
    assert packed["quarantined_by_reason"] == plain["quarantined_by_reason"]


def test_gzip_detected_by_magic_without_suffix(tmp_path):
    src = write(tmp_path / "reviews.data", gzip.compress(good_line(0), mtime=0))
    assert ingest_reviews(src, tmp_path / "r.parquet")["compression"] == "gzip"


def test_gz_suffix_without_gzip_header_is_an_error(tmp_path):
    src = write(tmp_path / "reviews.jsonl.gz", b"<html>Not Found</html>\n")
    with pytest.raises(IngestError, match="not_gzip"):
        ingest_reviews(src, tmp_path / "r.parquet")


def test_truncated_gzip_stream_is_an_error(tmp_path):
    data = gzip.compress(b"".join(good_line(i) for i in range(200)), mtime=0)
    src = write(tmp_path / "r.jsonl.gz", data[: len(data) // 2])
    with pytest.raises(IngestError, match="corrupt_gzip"):
        ingest_reviews(src, tmp_path / "r.parquet")
    assert not (tmp_path / "r.parquet").exists()


def test_output_is_byte_deterministic(tmp_path):
    src, _, _, _ = mixed_file(tmp_path)
    outputs = []
    for run in ("a", "b"):
        report = ingest_reviews(
            src,
            tmp_path / run / "r.parquet",
            quarantine_path=tmp_path / run / "q.jsonl",
            report_path=tmp_path / run / "report.json",
            **LENIENT,
        )
        outputs.append(
            (
                (tmp_path / run / "r.parquet").read_bytes(),
                (tmp_path / run / "q.jsonl").read_bytes(),
                (tmp_path / run / "report.json").read_bytes(),
                report,
            )
        )
    assert outputs[0] == outputs[1]


def test_chunking_does_not_change_rows(tmp_path):
    src, _, _, _ = mixed_file(tmp_path)
    ingest_reviews(src, tmp_path / "small.parquet", chunk_size=3, **LENIENT)
    ingest_reviews(src, tmp_path / "big.parquet", chunk_size=50_000, **LENIENT)
    small, big = pq.read_table(tmp_path / "small.parquet"), pq.read_table(tmp_path / "big.parquet")
    assert small.equals(big)
    assert pq.ParquetFile(tmp_path / "small.parquet").num_row_groups > 1


# ---------------------------------------------------------------------------------------------
# Meta


def product(i: int, **over) -> dict:
    rec = {
        "main_category": "Toys & Games",
        "title": f"Product {i}",
        "average_rating": 4.5,
        "rating_number": 10 + i,
        "features": ["Soft", "Washable"],
        "description": ["A toy."],
        "price": 12.99,
        "images": [{"thumb": "https://x/t.jpg", "large": "https://x/l.jpg", "variant": "MAIN"}],
        "videos": [],
        "store": "Acme",
        "categories": ["Toys", "Plush"],
        "details": {"Brand": "Acme"},
        "parent_asin": f"P{i:05d}",
        "bought_together": None,
    }
    rec.update(over)
    return rec


def ingest_products(tmp_path, recs, **kw):
    src = write(tmp_path / "meta.jsonl", b"".join(r if type(r) is bytes else line(r) for r in recs))
    report = ingest_meta(src, tmp_path / "meta.parquet", **{**LENIENT, **kw})
    return report, pq.read_table(tmp_path / "meta.parquet")


@pytest.mark.parametrize(
    ("price", "expected", "raw", "outcome"),
    [
        (12.99, 12.99, None, "number"),
        (5, 5.0, None, "number"),
        ("$12.99", 12.99, "$12.99", "string_parsed"),
        (" $1,299.00 ", 1299.0, " $1,299.00 ", "string_parsed"),
        ("7", 7.0, "7", "string_parsed"),
        ("None", None, "None", "string_null"),
        ("", None, "", "string_null"),
        ("$10.99 - $15.99", None, "$10.99 - $15.99", "string_unparsed"),
        ("from $3", None, "from $3", "string_unparsed"),
        (None, None, None, "absent_or_null"),
    ],
)
def test_meta_price_parsing(tmp_path, price, expected, raw, outcome):
    report, table = ingest_products(tmp_path, [product(0, price=price)], policy="strict")
    row = table.to_pylist()[0]
    assert row["price"] == expected and row["price_raw"] == raw
    assert report["meta_price"][outcome] == 1
    assert sum(report["meta_price"].values()) == 1


def test_meta_details_are_stringified(tmp_path):
    details = {
        "Brand": "Acme",
        "Weight": 12,
        "Ratio": 1.5,
        "Waterproof": True,
        "Sizes": ["S", "M"],
        "Dims": {"h": 1},
        "Nothing": None,
    }
    report, table = ingest_products(tmp_path, [product(0, details=details)], policy="strict")
    assert table.column("details")[0].as_py() == [
        ("Brand", "Acme"),
        ("Weight", "12"),
        ("Ratio", "1.5"),
        ("Waterproof", "true"),
        ("Sizes", '["S","M"]'),
        ("Dims", '{"h":1}'),
        ("Nothing", None),
    ]
    assert report["details_values_stringified"] == 5


def test_meta_schema_and_values(tmp_path):
    _, table = ingest_products(tmp_path, [product(0), product(1, videos=None)], policy="strict")
    assert table.schema.equals(META_SCHEMA)
    row = table.to_pylist()[0]
    assert row["features"] == ["Soft", "Washable"] and row["categories"] == ["Toys", "Plush"]
    assert json.loads(row["images_json"])[0]["variant"] == "MAIN"
    assert row["videos_json"] == "[]" and row["bought_together_json"] is None
    assert table.column("videos_json")[1].as_py() is None
    assert table.column("source_line").to_pylist() == [1, 2]


BAD_PRODUCTS = [
    ("features_not_list", product(10, features="Soft"), "wrong_type"),
    ("features_not_strings", product(11, features=["a", 3]), "wrong_type"),
    ("categories_not_strings", product(12, categories=[None]), "wrong_type"),
    ("details_not_object", product(13, details=["Brand", "Acme"]), "wrong_type"),
    ("price_list", product(14, price=[1]), "wrong_type"),
    ("price_negative", product(15, price=-1), "out_of_range"),
    ("average_rating_six", product(16, average_rating=6), "out_of_range"),
    ("rating_number_str", product(17, rating_number="12"), "wrong_type"),
    ("missing_title", without(product(18), "title"), "missing_field"),
    ("empty_parent_asin", product(19, parent_asin=" "), "empty_id"),
    ("images_not_objects", product(20, images=["https://x"]), "wrong_type"),
    ("title_blank", product(21, title=" \u200b\u00a0"), "empty_title"),
    ("parent_asin_slash", product(22, parent_asin="P/22"), "bad_id"),
    ("parent_asin_zero_width", product(24, parent_asin="P\u200b24"), "bad_id"),
    (
        "details_duplicate_key",
        line(product(23, details={"Brand": "A"})).replace(
            b'{"Brand": "A"}', b'{"Brand": "A", "Brand": "B"}'
        ),
        "duplicate_key",
    ),
    ("duplicate_product", product(0, title="Again"), "duplicate_product"),
]


def test_meta_quarantine(tmp_path):
    recs = [product(0)] + [r for _, r, _ in BAD_PRODUCTS] + [product(1)]
    report, table = ingest_products(tmp_path, recs)
    assert report["quarantined_by_reason"] == dict(Counter(r for _, _, r in BAD_PRODUCTS))
    assert report["records_written"] == 2 == table.num_rows
    assert table.column("title").to_pylist() == ["Product 0", "Product 1"]
    assert report["records_read"] == len(recs)


@pytest.mark.parametrize(
    ("kind", "rec", "reason"), BAD_PRODUCTS, ids=[k for k, _, _ in BAD_PRODUCTS]
)
def test_meta_strict(tmp_path, kind, rec, reason):
    with pytest.raises(IngestError) as info:
        ingest_products(tmp_path, [product(0), rec], policy="strict")
    assert (info.value.line, info.value.reason) == (2, reason)


# ---------------------------------------------------------------------------------------------
# Fuzz: random value and byte mutations never crash the ingest and always reconcile

_ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    6,
    2**70,
    "",
    " ",
    "x",
    "five",
    [],
    [1],
    ["a"],
    [{}],
    {},
    {"a": 1},
]


def _mutations(seed: int, n: int, base: dict, id_key: str) -> list[bytes]:
    import random

    rnd = random.Random(seed)
    out = []
    for i in range(n):
        rec = dict(base, **{id_key: f"ID{i}"})
        key = rnd.choice([*rec, "extra"])
        if rnd.random() < 0.2:
            rec.pop(key, None)
        else:
            rec[key] = rnd.choice(_ODD_VALUES)
        raw = bytearray(line(rec))
        if rnd.random() < 0.2:  # byte damage somewhere before the newline
            pos = rnd.randrange(len(raw) - 1)
            raw[pos] = rnd.choice([0x00, 0xFF, 0x22, 0x7B, 0x5C, 0x20])
        out.append(bytes(raw))
    return out


@pytest.mark.parametrize(
    ("ingest", "base", "id_key"),
    [(ingest_reviews, review(0), "user_id"), (ingest_meta, product(0), "parent_asin")],
)
def test_fuzzed_records_reconcile(tmp_path, ingest, base, id_key):
    src = write(tmp_path / "fuzz.jsonl", b"".join(_mutations(13, 400, base, id_key)))
    report = ingest(src, tmp_path / "fuzz.parquet", **LENIENT)
    assert report["records_read"] == 400
    assert set(report["quarantined_by_reason"]) <= set(REASONS)
    assert report["records_written"] == pq.read_metadata(tmp_path / "fuzz.parquet").num_rows
    assert 50 < report["records_written"] < 400
    assert len(report["quarantined_by_reason"]) >= 5
    quarantined = (tmp_path / "fuzz.quarantine.jsonl").read_text().splitlines()
    assert len(quarantined) == report["records_quarantined"] == 400 - report["records_written"]


def test_library_limits_are_the_schema_defaults():
    """``DEFAULT_LIMITS`` (the functions' defaults) repeat ``data.ingest``'s schema defaults so
    the library works without a config; they must not drift apart."""
    from personalir.common.config import validate_config
    from personalir.data.ingest_schema import DEFAULT_LIMITS

    ingest = validate_config({})["data"]["ingest"]
    assert {k: ingest[k] for k in DEFAULT_LIMITS} == DEFAULT_LIMITS
