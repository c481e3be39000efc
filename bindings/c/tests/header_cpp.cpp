// The header compiles as C++ (extern "C" linkage, typed enum), and is safe to include twice.
#include "agentstream.h"
#include "agentstream.h"

#include <cstdint>
#include <type_traits>

static_assert(sizeof(agentstream_status) == 4, "agentstream_status is 32-bit");
static_assert(std::is_same<std::underlying_type<agentstream_status>::type, uint32_t>::value, "uint32_t underlying");
static_assert(std::is_same<std::underlying_type<agentstream_next>::type, uint32_t>::value, "uint32_t underlying");

int main() {
    agentstream_decoder *d = nullptr;
    agentstream_status st = agentstream_decoder_new("claude", &d);
    agentstream_decoder_free(d);
    agentstream_session *s = nullptr;
    agentstream_status st2 = agentstream_session_new("codex", &s);
    agentstream_session_free(s);
    agentstream_next kind = AGENTSTREAM_NEXT_END;
    (void)kind;
    return st == AGENTSTREAM_STATUS_OK && st2 == AGENTSTREAM_STATUS_OK ? 0 : 1;
}
