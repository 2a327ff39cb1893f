"""Native unit tests of render.py: `python3 -m unittest`."""

import unittest

from render import Unsupported, render


class RenderTest(unittest.TestCase):
    def test_writes_one_compact_line_per_resource_in_order(self):
        resources = ['{"kind": "Service",\n "metadata": {"name": "api"}}', '{"kind":"ConfigMap"}']
        self.assertEqual(
            render(resources, "yaml", False),
            [("resources.jsonl", b'{"kind":"Service","metadata":{"name":"api"}}\n{"kind":"ConfigMap"}\n')],
        )

    def test_split_and_other_formats_are_refused(self):
        with self.assertRaises(Unsupported):
            render([], "yaml", True)
        with self.assertRaises(Unsupported):
            render([], "toml", False)


if __name__ == "__main__":
    unittest.main()
