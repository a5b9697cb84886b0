"""Paddle's data generators: output byte for byte in the MultiSlot text
format, batching, errors, and the Paddle names under the compat switch."""

import io
import sys
import textwrap

import pytest

from flotilla.distributed.fleet import data_generator as dg
from conftest import run_python


class Words(dg.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def it():
            ids = [int(t) for t in line.split()]
            if not ids:
                yield None
                return
            yield ("words", ids[1:]), ("label", ids[:1])
        return it


def run_stdin(gen, text, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    monkeypatch.setattr(sys, "stdout", out)
    gen.run_from_stdin()
    return out.getvalue()


def test_multislot_gen_str_exact():
    g = dg.MultiSlotDataGenerator()
    assert g._gen_str([("words", [1926, 8, 17]), ("label", [1])]) == "3 1926 8 17 1 1\n"
    assert g._proto_info == [("words", "uint64"), ("label", "uint64")]
    assert g._gen_str((("words", [5]), ("label", [0.5]))) == "1 5 1 0.5\n"
    assert g._proto_info == [("words", "uint64"), ("label", "float")]
    assert g._gen_str(zip(["words", "label"], [[-3, 2**40], [1e-07]])) == "2 -3 1099511627776 1 1e-07\n"


def test_multislot_string_gen_str_exact():
    g = dg.MultiSlotStringDataGenerator()
    assert g._gen_str([("words", ["1926", "08", "17"]), ("label", ["1"])]) == "3 1926 08 17 1 1\n"
    assert g._gen_str([("a", []), ("b", ["x"])]) == "0 1 x\n"


@pytest.mark.parametrize("line, message", [
    ("not a list", "must be in list or tuple type"),
    ([(1, [1])], "must be in str type"),
    ([("a", (1,))], "must be in list type"),
    ([("a", [])], "can not be empty"),
    ([("a", ["1"])], "must be in int or float"),
])
def test_multislot_rejects(line, message):
    with pytest.raises(ValueError, match=message):
        dg.MultiSlotDataGenerator()._gen_str(line)


def test_multislot_rejects_changed_slots():
    g = dg.MultiSlotDataGenerator()
    g._gen_str([("a", [1]), ("b", [2])])
    with pytest.raises(ValueError, match="inconsistent"):
        g._gen_str([("a", [1])])
    with pytest.raises(ValueError, match=r"require<b>, get<c>"):
        g._gen_str([("a", [1]), ("c", [2])])


def test_run_from_stdin_skips_none_and_batches(monkeypatch):
    class Doubled(Words):
        def generate_batch(self, samples):
            def it():
                yield from samples
                yield (("words", [len(samples)]), ("label", [9]))
            return it

    g = Doubled()
    g.set_batch(2)
    out = run_stdin(g, "0 7 8 9\n\n1 5\n0 6\n", monkeypatch)
    assert out == "3 7 8 9 1 0\n1 5 1 1\n1 2 1 9\n1 6 1 0\n1 1 1 9\n"


def test_run_from_memory(monkeypatch):
    class Mem(dg.MultiSlotDataGenerator):
        def generate_sample(self, line):
            assert line is None

            def it():
                for i in range(3):
                    yield [("x", [i, i + 1])]
            return it

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    Mem().run_from_memory()
    assert out.getvalue() == "2 0 1\n2 1 2\n2 2 3\n"


def test_base_class_says_what_to_override():
    with pytest.raises(NotImplementedError, match="rewrite this function"):
        dg.DataGenerator().generate_sample("x")
    with pytest.raises(NotImplementedError, match="MultiSlotDataGenerator"):
        dg.DataGenerator()._gen_str([])


def test_paddle_names_under_compat_switch(tmp_path):
    script = tmp_path / "reader.py"
    script.write_text(textwrap.dedent("""
        import paddle.distributed.fleet as fleet
        import paddle.distributed.fleet.data_generator as dg2
        import paddle.fluid.incubate.data_generator as dg1
        assert dg1.MultiSlotDataGenerator is dg2.MultiSlotDataGenerator is fleet.MultiSlotDataGenerator
        class R(dg1.MultiSlotDataGenerator):
            def generate_sample(self, line):
                def it():
                    yield [("ids", [int(t) for t in line.split()])]
                return it
        R().run_from_stdin()
    """))
    r = run_python(["-m", "flotilla.paddle_compat", str(script)], input="4 5\n6\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "2 4 5\n1 6\n"
