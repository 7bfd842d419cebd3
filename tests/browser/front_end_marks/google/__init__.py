# A namespace like the real one: other google.* packages in the same environment still import.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
