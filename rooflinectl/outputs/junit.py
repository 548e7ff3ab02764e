"""JUnit XML, the report CI systems show as test results: one writer for `advise` and `diff`.

Every name and message passes through escape.plain (control characters made visible: XML 1.0
cannot hold most of them); ElementTree escapes the markup.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rooflinectl.outputs.escape import plain


class JUnitSuite:
    """One <testsuite> under <testsuites name="rooflinectl">; add cases, then `xml()`."""

    def __init__(self, name: str) -> None:
        self.suite = ET.Element("testsuite", name=name)
        self.classname = name
        self.failures = self.skipped = 0

    def case(self, name: str, *, failure: tuple[str, str] | None = None, failure_text: str | None = None,
             skipped: str | None = None, output: str | None = None) -> None:
        """A test case: failed (failure = (type, message), with an optional body), skipped (with
        why), or passed; `output` goes to its system-out. Bodies are written as given."""
        element = ET.SubElement(self.suite, "testcase", classname=self.classname, name=plain(name), time="0")
        if failure is not None:
            self.failures += 1
            node = ET.SubElement(element, "failure", type=plain(failure[0]), message=plain(failure[1]))
            if failure_text is not None:
                node.text = failure_text
        elif skipped is not None:
            self.skipped += 1
            ET.SubElement(element, "skipped", message=plain(skipped))
        if output is not None:
            ET.SubElement(element, "system-out").text = output

    def xml(self) -> str:
        tests = str(len(self.suite))
        for key, value in (("tests", tests), ("failures", str(self.failures)), ("errors", "0"),
                           ("skipped", str(self.skipped))):
            self.suite.set(key, value)
        root = ET.Element("testsuites", name="rooflinectl", tests=tests, failures=str(self.failures))
        root.append(self.suite)
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
