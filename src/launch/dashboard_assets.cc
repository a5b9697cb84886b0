#include "launch/dashboard_assets.h"

// FLOTILLA_DASHBOARD_PAGE and FLOTILLA_CHART_JS are absolute paths set by
// CMake; .incbin copies the files' bytes into read-only data.
#define FLOTILLA_EMBED(name, path)                                     \
  asm(".pushsection .rodata\n"                                         \
      ".global " #name "_begin\n" #name "_begin:\n"                    \
      ".incbin \"" path "\"\n"                                         \
      ".global " #name "_end\n" #name "_end:\n"                        \
      ".byte 0\n"                                                      \
      ".popsection\n");                                                \
  extern "C" const char name##_begin[];                                \
  extern "C" const char name##_end[];

FLOTILLA_EMBED(flotilla_dashboard_page, FLOTILLA_DASHBOARD_PAGE)
FLOTILLA_EMBED(flotilla_chart_js, FLOTILLA_CHART_JS)

namespace flotilla::launch {

std::string_view DashboardPage() {
  return {flotilla_dashboard_page_begin,
          static_cast<size_t>(flotilla_dashboard_page_end - flotilla_dashboard_page_begin)};
}

std::string_view ChartJs() {
  return {flotilla_chart_js_begin,
          static_cast<size_t>(flotilla_chart_js_end - flotilla_chart_js_begin)};
}

}  // namespace flotilla::launch
