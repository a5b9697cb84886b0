// The dashboard's page and Chart.js, embedded in the binary at build time
// (src/launch/CMakeLists.txt copies Debian's libjs-chart.js into the build),
// so the page needs nothing from the network. Private to launch.
#pragma once

#include <string_view>

namespace flotilla::launch {

std::string_view DashboardPage();
std::string_view ChartJs();

}  // namespace flotilla::launch
