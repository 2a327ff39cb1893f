"""Native unit tests of render.py: `python3 -m unittest`."""

import unittest

from render import InvalidComponent, render


class RenderTest(unittest.TestCase):
    def test_renders_the_data_into_a_config_map(self):
        component = {"metadata": {"name": "settings"}, "spec": {"configMap": {"data": {"mode": "fast"}}}}
        [config_map] = render(component, "prod", [("team", "web")])
        self.assertEqual(config_map["kind"], "ConfigMap")
        self.assertEqual(config_map["metadata"]["namespace"], "prod")
        self.assertEqual(config_map["metadata"]["labels"]["team"], "web")
        self.assertEqual(config_map["data"], {"mode": "fast"})

    def test_a_component_without_data_is_invalid(self):
        with self.assertRaises(InvalidComponent):
            render({"metadata": {"name": "settings"}, "spec": {}}, "prod", [])


if __name__ == "__main__":
    unittest.main()
