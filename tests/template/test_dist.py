"""scripts/dist.py's refusals that need no build (run by scripts/template_test.sh): a release is
never packed while CHANGELOG.md has entries under [Unreleased] (issue 82, defect 5)."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import dist  # noqa: E402


class Unreleased(unittest.TestCase):
    def test_entries_under_unreleased_are_found_and_an_empty_section_is_not(self):
        self.assertTrue(dist.unreleased("# Changelog\n\n## [Unreleased]\n\n### Added\n- x\n\n## [0.1.0] - 2026-11-29\n- y\n"))
        self.assertFalse(dist.unreleased("# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-29\n- y\n"))
        self.assertFalse(dist.unreleased("# Changelog\n\n## [0.1.0] - 2026-11-29\n- y\n"))

    def test_make_dist_refuses_while_the_changelog_has_unreleased_entries(self):
        if not dist.unreleased(open(os.path.join(ROOT, "CHANGELOG.md")).read()):
            self.skipTest("CHANGELOG.md has no [Unreleased] entries now")
        with tempfile.TemporaryDirectory() as out:
            run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/dist.py"), "--out", out],
                                 capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("entries under [Unreleased]", run.stderr)


if __name__ == "__main__":
    unittest.main()
