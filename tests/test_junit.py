"""The one JUnit writer (outputs/junit.py) that advise and diff share: counts by hand, and every
name and message well-formed XML whatever the profile held."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rooflinectl.outputs.junit import JUnitSuite


def test_counts_and_cases_by_hand() -> None:
    suite = JUnitSuite("rooflinectl.advise")
    suite.case("fusion.chain", failure=("warning", "2 finding(s)"), failure_text="evidence\nFix: fuse")
    suite.case("gate.time", skipped="threshold not set")
    suite.case("launch.overhead", output="one info finding")
    suite.case("stop.at-roof")
    text = suite.xml()
    assert text.startswith('<?xml version="1.0" encoding="utf-8"?>\n')
    root = ET.fromstring(text.split("\n", 1)[1])
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "4", "1")
    (s,) = root
    assert {k: s.get(k) for k in ("name", "tests", "failures", "errors", "skipped")} == {
        "name": "rooflinectl.advise", "tests": "4", "failures": "1", "errors": "0", "skipped": "1"}
    cases = {c.get("name"): c for c in s}
    assert cases["fusion.chain"].find("failure").get("type") == "warning"
    assert cases["fusion.chain"].find("failure").text == "evidence\nFix: fuse"
    assert cases["gate.time"].find("skipped").get("message") == "threshold not set"
    assert cases["launch.overhead"].find("system-out").text == "one info finding"
    assert list(cases["stop.at-roof"]) == [] and cases["stop.at-roof"].get("classname") == "rooflinectl.advise"


def test_control_characters_in_names_and_messages_stay_well_formed() -> None:
    suite = JUnitSuite("rooflinectl.diff")
    suite.case("kernel\x1b[2J\x07", failure=("regression", "incomplete profile: run\x00died"))
    root = ET.fromstring(suite.xml().split("\n", 1)[1])
    case = root[0][0]
    assert case.get("name") == "kernel\\x1b[2J\\x07"
    assert case.find("failure").get("message") == "incomplete profile: run\\x00died"
