"""geolip: geometric terrain analysis of neural networks."""
__version__ = "0.1.0"
