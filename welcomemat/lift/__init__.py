"""Lift maths: arms compared, intervals, daily series, charts, the results page's numbers."""
