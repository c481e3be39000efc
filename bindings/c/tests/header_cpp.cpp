// The header compiles as C++ (extern "C" linkage, typed enum), and is safe to include twice.
#include "agentstream.h"
#include "agentstream.h"

#include <cstdint>
#include <type_traits>

static_assert(sizeof(agentstream_status) == 4, "agentstream_status is 32-bit");
static_assert(std::is_same<std::underlying_type<agentstream_status>::type, uint32_t>::value, "uint32_t underlying");

int main() {
    agentstream_decoder *d = nullptr;
    agentstream_status st = agentstream_decoder_new("claude", &d);
    agentstream_decoder_free(d);
    return st == AGENTSTREAM_STATUS_OK ? 0 : 1;
}
