"""Every chart's numbers as a table on the page (issue 27: a text alternative whose table the keyboard reaches):
each chart has a "Table" switch beside its downloads; switched on, the table the chart draws is shown, row for
row; switched off, nothing is sent."""

import pyarrow as pa
import pytest
from conftest import figures_shown

from seqviz.charts.base import TABLE


def table_switches(at) -> list:
    return [t for t in at.toggle if str(t.key).startswith("table-")]


def chart_rows(at, index: int) -> int | None:
    """How many rows the index-th chart's table has, read from what the page sent (its Arrow dataset)."""
    chart = at.get("vega_lite_chart")[index].proto
    for dataset in chart.datasets:
        if dataset.name == TABLE:
            return pa.ipc.open_stream(dataset.data.data).read_all().num_rows
    return None


@pytest.mark.parametrize("page", ["app_pages/attention.py", "app_pages/order.py"])
def test_each_chart_s_switch_shows_its_table(open_page, page):
    at = open_page(page)
    charts = figures_shown(at)
    switches = table_switches(at)
    assert len(switches) == len(charts), (charts, [t.key for t in switches])
    assert not at.dataframe, "no table is sent before it is asked for"
    for i, switch in enumerate(switches):
        at.toggle(key=switch.key).set_value(True).run()
        assert not at.exception, [e.value for e in at.exception]
        (shown,) = at.dataframe
        table = shown.value
        assert len(table) > 0 and len(table.columns) > 0, switch.key
        rows = chart_rows(at, i)
        if rows is not None:  # a chart drawn from its own inline data has no Arrow table to compare with
            assert len(table) == rows, (switch.key, len(table), rows)
        at.toggle(key=switch.key).set_value(False).run()
        assert not at.dataframe, switch.key
