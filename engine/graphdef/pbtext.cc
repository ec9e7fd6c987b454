/* pbtext.cc — the protobuf text format of a GraphDef (`.pbtxt`), through libprotobuf's own
 * TextFormat parser and printer over the classes protoc generates from tensorflow_graph.proto: the
 * real implementation, so that text TensorFlow wrote (escapes, comments, `key: value` or `key {`,
 * enum names) reads as TensorFlow reads it. The rest of the library is C and sees two conversions,
 * text <-> binary encoding, behind a C interface (graphdef_internal.h); no C++ exception crosses it.
 */
#include <cstdlib>
#include <cstring>
#include <string>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "tensorflow_graph.pb.h"

extern "C" {
#include "graphdef_internal.h"
}

namespace {

char *copy_out(const std::string &s)
{
    char *out = static_cast<char *>(std::malloc(s.size() + 1));
    if (out) {
        std::memcpy(out, s.data(), s.size());
        out[s.size()] = 0;
    }
    return out;
}

/* Keeps the first error (the parser stops there) with its 1-based line and column. */
class FirstError : public google::protobuf::io::ErrorCollector {
  public:
    std::string message;

    void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string &what) override
    {
        if (message.empty())
            message = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
                      ": " + what;
    }
    void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string &) override {}
};

} // namespace

bool graphdef_text_to_binary(const char *text, size_t len, uint8_t **out, size_t *out_len, char **message)
{
    *out = nullptr;
    *message = nullptr;
    try {
        tensorflow::GraphDef graph;
        FirstError errors;
        google::protobuf::TextFormat::Parser parser;
        parser.RecordErrorsTo(&errors);
        if (!parser.ParseFromString(std::string(text, len), &graph)) {
            *message = copy_out(errors.message.empty() ? "not a GraphDef in the protobuf text format"
                                                       : errors.message);
            return false;
        }
        std::string bytes;
        if (!graph.SerializeToString(&bytes)) {
            *message = copy_out("the GraphDef is too large to encode (2 GiB at most)");
            return false;
        }
        *out = reinterpret_cast<uint8_t *>(copy_out(bytes));
        *out_len = bytes.size();
        if (!*out)
            *message = copy_out("out of memory");
        return *out != nullptr;
    } catch (const std::exception &e) {
        *message = copy_out(std::string("protobuf: ") + e.what());
        return false;
    }
}

bool graphdef_binary_to_text(const uint8_t *data, size_t len, char **out, size_t *out_len, char **message)
{
    *out = nullptr;
    *message = nullptr;
    try {
        tensorflow::GraphDef graph;
        if (len > static_cast<size_t>(INT32_MAX) || !graph.ParseFromArray(data, static_cast<int>(len))) {
            *message = copy_out("the binary GraphDef does not parse");
            return false;
        }
        std::string text;
        if (!google::protobuf::TextFormat::PrintToString(graph, &text)) {
            *message = copy_out("the GraphDef could not be printed as text");
            return false;
        }
        *out = copy_out(text);
        *out_len = text.size();
        if (!*out)
            *message = copy_out("out of memory");
        return *out != nullptr;
    } catch (const std::exception &e) {
        *message = copy_out(std::string("protobuf: ") + e.what());
        return false;
    }
}
