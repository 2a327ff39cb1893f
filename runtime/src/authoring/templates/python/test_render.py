"""Native unit tests of render.py and the helpers of opm.py: `python3 -m unittest`."""

import json
import unittest

from opm import INSTANCE_LABEL, Component, Context, Failed, InvalidComponent, where
from render import CONFIG_MAP, SECRET, render


def context(transformer, labels=(("team", "web"),)):
    """A context as the host gives it, calling the transformer `transformer`."""
    return Context(name="shop", namespace="prod", labels=dict(labels), module="shop", transformer=transformer)


SETTINGS = Component.from_value({"metadata": {"name": "settings"}, "spec": {"configMap": {"data": {"mode": "fast"}}}})


class RenderTest(unittest.TestCase):
    def test_renders_the_data_into_a_config_map(self):
        [config_map] = render(SETTINGS, context(CONFIG_MAP))
        self.assertEqual(config_map["kind"], "ConfigMap")
        self.assertEqual(config_map["metadata"]["name"], "settings")
        self.assertEqual(config_map["metadata"]["namespace"], "prod")
        self.assertEqual(config_map["metadata"]["labels"]["team"], "web")
        self.assertEqual(config_map["data"], {"mode": "fast"})

    def test_the_same_component_renders_a_secret_when_the_secret_transformer_calls_it(self):
        credentials = Component.from_value({"metadata": {"name": "db"}, "spec": {"secret": {"data": {"password": "s3cret"}}}})
        [secret] = render(credentials, context(SECRET))
        self.assertEqual(secret["kind"], "Secret")
        self.assertEqual(secret["stringData"], {"password": "s3cret"})
        with self.assertRaises(InvalidComponent):
            render(credentials, context(CONFIG_MAP))

    def test_a_transformer_it_does_not_serve_fails_naming_the_ones_it_does(self):
        with self.assertRaises(Failed) as raised:
            render(SETTINGS, context("example.com/transformers/other@v1#Other"))
        self.assertIn(CONFIG_MAP, str(raised.exception))
        self.assertIn(SECRET, str(raised.exception))

    def test_a_component_without_data_is_invalid(self):
        with self.assertRaises(InvalidComponent):
            render(Component.from_value({"metadata": {"name": "settings"}, "spec": {}}), context(CONFIG_MAP))


class HelpersTest(unittest.TestCase):
    def test_a_second_instance_prefixes_the_names_the_module_s_own_does_not(self):
        self.assertEqual(context(CONFIG_MAP).object_name("settings"), "settings")
        second = Context(name="shop-eu", namespace="prod", labels={INSTANCE_LABEL: "shop-eu"}, transformer=CONFIG_MAP)
        self.assertEqual(second.name_prefix(), "shop-eu-")
        self.assertEqual(second.object_name("settings"), "shop-eu-settings")
        [config_map] = render(SETTINGS, second)
        self.assertEqual(config_map["metadata"]["name"], "shop-eu-settings")

    def test_the_context_is_read_from_what_the_bindings_pass(self):
        class Wit:  # the WIT record as componentize-py passes it: labels as pairs
            name, namespace, version, provider = "shop", "prod", "1.0.0", "demo"
            timestamp, strict, labels = "1970-01-01T00:00:00Z", False, [("team", "web")]
            module, platform, provider_version, transformer = "shop", "", "0.1.0", SECRET

        read = Context.from_wit(Wit())
        self.assertEqual(read.labels, {"team": "web"})
        self.assertEqual((read.provider_version, read.transformer), ("0.1.0", SECRET))

    def test_the_component_s_accessors_read_what_the_host_flattened(self):
        api = Component.from_json(json.dumps({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
            "resources": ["opm.dev/resources/workload@v1#Container"],
            "traits": ["opm.dev/traits/scaling@v1#Replicas"],
            "spec": {"container": {"image": "nginx:1.27"}, "replicas": 3},
            "defaults": {"restartPolicy": {"policy": "Always"}},
        }))
        self.assertEqual(api.name, "api")
        self.assertEqual(api.label("core.opm.dev/workload-type"), "stateless")
        self.assertTrue(api.attaches("opm.dev/traits/scaling@v1#Replicas"))
        self.assertFalse(api.attaches("opm.dev/traits/network@v1#Expose"))
        self.assertEqual(api.policies, [])
        self.assertEqual(api.field("replicas"), 3)
        self.assertIsNone(api.field("missing"))
        self.assertEqual(api.field_or_default("restartPolicy"), {"policy": "Always"})
        with self.assertRaisesRegex(InvalidComponent, 'component "api" has no spec.expose'):
            api.require("expose")
        for malformed in ["{", "{}", "[]"]:
            with self.assertRaises(InvalidComponent):
                Component.from_json(malformed)

    def test_an_error_names_the_innermost_frame_in_the_author_s_files_then_where_it_was_raised(self):
        def dump():
            return json.dumps({"a": {1, 2}})  # a set: raised inside the standard library

        try:
            dump()
        except TypeError as error:
            said = where(error)
        self.assertRegex(said, r"^ \(test_render\.py, line \d+, in dump; raised in json/encoder\.py, line \d+, in default\)$")

        try:
            {}["missing"]
        except KeyError as error:
            said = where(error)
        self.assertRegex(said, r"^ \(test_render\.py, line \d+, in test_an_error_names_.+\)$")


if __name__ == "__main__":
    unittest.main()
