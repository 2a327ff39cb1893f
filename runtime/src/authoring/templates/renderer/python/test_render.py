"""Native unit tests of render.py: `python3 -m unittest`."""

import unittest

from render import Refused, Unsupported, render


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

    def test_a_resource_that_is_the_same_object_as_one_before_it_is_refused_by_its_position(self):
        settings = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}'
        other = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}'
        with self.assertRaises(Refused) as raised:
            render([settings, other, settings], "yaml", False)
        self.assertEqual(raised.exception.refusals, [(2, 'the same object as resource 0, ConfigMap "settings"')])


if __name__ == "__main__":
    unittest.main()
