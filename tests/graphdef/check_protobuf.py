#!/usr/bin/env python3
"""check_protobuf.py — GraphDefs that tide exports parse with Python's protobuf (Debian's
python3-protobuf), using classes that protoc (Debian's protobuf-compiler) generates from the same
tensorflow_graph.proto, and follow TensorFlow's conventions; and a GraphDef that Python's protobuf
writes imports back into the same tide graph.

    check_protobuf.py GRAPHDEF_TOOL PROTO_FILE

Exit status 0 when every check holds, 1 on the first failure, 77 (skipped) when protoc or the Python
protobuf module is missing.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def fail(message):
    print("check_protobuf: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def generated_module(proto, out):
    protoc = shutil.which("protoc")
    if not protoc:
        print("check_protobuf: skipped: protoc (Debian's protobuf-compiler) is not installed")
        sys.exit(77)
    try:
        import google.protobuf  # noqa: F401
        from google.protobuf import text_format  # noqa: F401
    except ImportError:
        # Debian's python3-protobuf is in the system interpreter's path; another python3 (pyenv, a
        # virtual environment) first on PATH does not see it.
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            os.execv(system, [system] + sys.argv)
        print("check_protobuf: skipped: Python's protobuf (Debian's python3-protobuf) is not installed")
        sys.exit(77)
    subprocess.run([protoc, "--proto_path=" + os.path.dirname(proto), "--python_out=" + out,
                    os.path.basename(proto)], check=True)
    sys.path.insert(0, out)
    import tensorflow_graph_pb2
    return tensorflow_graph_pb2


def attr_kind(value):
    return value.WhichOneof("value")


def check_conventions(pb2, g):
    names = {n.name: n for n in g.node}
    check(len(names) == len(g.node), "node names are not unique")
    check(g.versions.producer == 27, "versions.producer is %d, not 27" % g.versions.producer)
    ops = {n.op for n in g.node}
    for op in ("VariableV2", "Assign", "MatMul", "BiasAdd", "Const", "Placeholder", "ApplyAdam", "NoOp"):
        check(op in ops, "no %s node among %s" % (op, sorted(ops)))
    check("Variable" not in ops, "tide's Variable is not written as VariableV2")
    for n in g.node:
        seen_control = False
        for i in n.input:
            control = i.startswith("^")
            check(not (seen_control and not control), "%s: a data input after a control input" % n.name)
            seen_control |= control
            source = i.lstrip("^").split(":")[0]
            check(source in names, "%s: input %s names no node" % (n.name, i))
        keys = list(n.attr.keys())
        check("_output_shapes" in keys or n.op == "NoOp", "%s has no _output_shapes" % n.name)
        for key in keys:
            check(attr_kind(n.attr[key]) is not None, "%s: attr %s has no value" % (n.name, key))
    # Attrs as TensorFlow sets them.
    mm = names["matmul"]
    check(mm.attr["T"].type == pb2.DT_FLOAT, "MatMul's T is not DT_FLOAT")
    check(attr_kind(mm.attr["transpose_a"]) == "b" and not mm.attr["transpose_a"].b, "MatMul's transpose_a")
    w = names["W"]
    check(w.op == "VariableV2", "W is a %s" % w.op)
    check([d.size for d in w.attr["shape"].shape.dim] == [4, 3], "W's shape")
    check(w.attr["dtype"].type == pb2.DT_FLOAT and w.attr["container"].s == b"", "W's dtype and container")
    x = names["x"]
    check([d.size for d in x.attr["shape"].shape.dim] == [-1, 4], "x's shape is not [-1, 4]")
    check(list(names["loss"].attr["_class"].list.s) == [b"loc:@b"], "loss's _class is not [loc:@b]")
    check(names["neg"].device == "/job:localhost/replica:0/task:0/device:cpu:0", "neg's device")
    check(list(names["neg"].input) == ["x", "^flags"], "neg's inputs are %s" % list(names["neg"].input))
    check(names["xent"].attr["_output_shapes"].list.shape[0].dim[0].size == -1, "xent's _output_shapes")
    # Tensors: a matrix in tensor_content, strings in string_val, a scalar in its value field.
    t = names["W/initial_value"].attr["value"].tensor
    check(t.dtype == pb2.DT_FLOAT and [d.size for d in t.tensor_shape.dim] == [4, 3], "W's initial value")
    values = struct.unpack("<12f", t.tensor_content)
    check(abs(values[0] - 0.1) < 1e-7 and abs(values[11] - 1.2) < 1e-6, "W's initial values %s" % (values,))
    words = names["words"].attr["value"].tensor
    check(list(words.string_val) == [b"tide", b"\xff\x00"], "strings: %s" % list(words.string_val))
    check(list(struct.unpack("<2e", names["h"].attr["value"].tensor.tensor_content)) == [1.5, -2.0], "float16")
    c = names["c"].attr["value"].tensor
    check(c.dtype == pb2.DT_COMPLEX128 and list(c.dcomplex_val) == [1.0, -2.0], "complex128 scalar")
    check(names["b/initial_value"].attr["value"].tensor.tensor_content == struct.pack("<3f", 0, 0.5, -0.5),
          "b's initial value")
    init = names["init"]
    check(init.op == "NoOp" and all(i.startswith("^") for i in init.input) and len(init.input) >= 4,
          "init's control inputs: %s" % list(init.input))
    return len(g.node)


def main():
    tool, proto = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        pb2 = generated_module(proto, tmp)
        from google.protobuf import text_format
        subprocess.run([tool, "export", tmp], check=True)
        binary = pb2.GraphDef()
        binary.ParseFromString(open(os.path.join(tmp, "tide.pb"), "rb").read())
        text = pb2.GraphDef()
        text_format.Parse(open(os.path.join(tmp, "tide.pbtxt")).read(), text)
        check(binary == text, "the binary and the text GraphDef differ")
        count = check_conventions(pb2, binary)
        # Python writes the GraphDef again (its own encoding of every field); tide reads it as the same graph.
        again = os.path.join(tmp, "python.pb")
        with open(again, "wb") as f:
            f.write(binary.SerializeToString())
        with open(os.path.join(tmp, "python.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(text))
        want = open(os.path.join(tmp, "tide.graph")).read()
        for name in ("python.pb", "python.pbtxt"):
            got = subprocess.run([tool, "text", os.path.join(tmp, name)], check=True, capture_output=True,
                                 text=True).stdout
            check(got == want, "%s reads back as another graph:\n%s\n---\n%s" % (name, got, want))
    print("check_protobuf: %d nodes parse with python3-protobuf, follow TensorFlow's conventions and read back"
          % count)


main()
