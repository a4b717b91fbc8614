"""The pages of the app: scripts that st.navigation runs (``dashboard/app.py``); they import
the services of :mod:`dashboard`, never the reverse."""
