"""The in-instance tables: strings, heads, rows (growing, restarting, out-of-order batches)
and kept usage."""

from wasq_policy import wit
from wasq_policy.tables import EMPTY_HEAD, EMPTY_ROW, HeadTable, KeptUsage, RowTable, StringTable
from wasq_policy.testing import amounts, node_usage


def strings(first, *values):
    return wit.NewStrings(first, list(values))


def test_strings_grow_and_restart_at_first_zero():
    t = StringTable()
    t.add(strings(0, "prod", "Job"))
    t.add(strings(2, "batch/v1"))
    assert [t[i] for i in range(3)] == ["prod", "Job", "batch/v1"]
    assert len(t) == 3
    t.add(strings(0, "dev"))
    assert (len(t), t[0], t[1]) == (1, "dev", "")


def test_unknown_string_ids_read_as_empty_never_raise():
    t = StringTable()
    assert t[0] == "" and t[2**32 - 1] == "" and t[-1] == ""
    t.add(strings(0, "a"))
    assert t[1] == ""


def test_strings_out_of_order_first_pads_a_gap_and_replaces_an_overlap():
    t = StringTable()
    t.add(strings(0, "a", "b"))
    t.add(strings(4, "e"))  # a gap: ids 2 and 3 were never sent
    assert [t[i] for i in range(5)] == ["a", "b", "", "", "e"]
    t.add(strings(1, "B", "C"))  # over strings held: they are replaced, the rest dropped
    assert [t[i] for i in range(4)] == ["a", "B", "C", ""]
    assert len(t) == 3


def test_intern_finds_or_appends_and_follows_additions():
    t = StringTable()
    assert t.intern("x") == 0 and t.intern("y") == 1 and t.intern("x") == 0
    t.add(strings(2, "z"))
    assert t.intern("z") == 2
    t.add(strings(0, "w"))
    assert t.intern("x") == 1 and t[0] == "w"


def head(workload):
    return wit.HeadInfo(workload=workload, cluster_queue=1, priority=workload)


def test_heads_grow_restart_and_never_sent_ids_read_as_the_empty_head():
    t = HeadTable()
    t.add(wit.NewHeads(0, [head(7), head(8)]))
    t.add(wit.NewHeads(2, [head(9)]))
    assert [t[i].workload for i in range(3)] == [7, 8, 9]
    assert t[3] is EMPTY_HEAD and (EMPTY_HEAD.workload, EMPTY_HEAD.cluster_queue) == (0, 0)
    t.add(wit.NewHeads(0, [head(4)]))
    assert len(t) == 1 and t[0].workload == 4 and t[1] is EMPTY_HEAD
    t.add(wit.NewHeads(3, [head(5)]))  # past the end
    assert [t[i].workload for i in range(4)] == [4, 0, 0, 5]
    t.add(wit.NewHeads(1, [head(6)]))  # over heads held
    assert len(t) == 2 and [t[i].workload for i in range(2)] == [4, 6]
    t.clear()
    assert len(t) == 0 and t[0] is EMPTY_HEAD


def row(workload, *usage):
    return wit.AdmittedRow(workload=workload, cluster_queue=workload + 100,
                           usage=[wit.FrAmount(0, a) for a in usage])


def test_rows_grow_restart_and_never_sent_rows_read_as_the_empty_row():
    t = RowTable()
    t.add(wit.NewRows(0, [row(7, 1, 2), row(8), row(9, 3)]))
    t.add(wit.NewRows(3, [row(4, 5)]))
    assert [t[i].workload for i in range(4)] == [7, 8, 9, 4]
    assert [[u.amount for u in t[i].usage] for i in range(4)] == [[1, 2], [], [3], [5]]
    assert t[17] is EMPTY_ROW and EMPTY_ROW.usage == []
    t.add(wit.NewRows(0, [row(3, 30)]))
    assert len(t) == 1 and t[0].workload == 3
    t.add(wit.NewRows(3, [row(5)]))
    assert [t[i].workload for i in range(4)] == [3, 0, 0, 5]
    t.add(wit.NewRows(1, [row(6)]))
    assert [t[i].workload for i in range(3)] == [3, 6, 0] and len(t) == 2


def test_kept_usage_entries_replace_the_requests_flavor_resources_only():
    k = KeptUsage()
    k.reset(nodes=2, flavor_resources=3)
    every = amounts({0: 1, 1: 1, 2: 1})
    k.receive([node_usage(1, {0: 5, 1: 6, 2: 7})], every)
    k.receive([node_usage(0, {0: 9})], every)
    assert (k.get(1, 0), k.get(1, 1), k.get(1, 2), k.get(0, 0)) == (5, 6, 7, 9)
    # A request for flavor-resources 0 and 1 lists node 1 with only 1: 0 is now 0; 2 is not
    # the request's and keeps its value; node 0 is not listed and keeps its value.
    k.receive([node_usage(1, {1: 3})], amounts({0: 1, 1: 1}))
    assert (k.get(1, 0), k.get(1, 1), k.get(1, 2), k.get(0, 0)) == (0, 3, 7, 9)
    # Unknown nodes and flavor-resources are skipped.
    k.receive([node_usage(7, {0: 1}), node_usage(1, {9: 1})], every)
    assert (k.get(7, 0), k.get(1, 9)) == (0, 0)
    assert (k.get(1, 0), k.get(1, 1)) == (0, 0), "node 1 listed again: its usage is what it lists"
    k.reset(2, 3)
    assert k.get(1, 2) == 0 and k.as_mapping() == {}
