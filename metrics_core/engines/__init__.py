"""Other ways to run the same evaluation (the Dask engine)."""
