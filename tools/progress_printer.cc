#include "tools/progress_printer.h"

#include <cmath>
#include <cstdio>

namespace tokpack::cli {

std::string ProgressPrinter::Bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string ProgressPrinter::Count(double n) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (n >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f%s" : "%.1f%s", n, units[u]);
  return buf;
}

std::string ProgressPrinter::Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

void ProgressPrinter::Update(const BuildProgress& p) {
  const double t = p.elapsed_seconds > 0 ? p.elapsed_seconds : 1e-9;
  const std::string rates = Count(p.documents / t) + " docs/s, " + Count(p.tokens / t) + " tok/s";
  std::string line;
  if (p.bytes_total > 0) {
    double frac = std::min(1.0, static_cast<double>(p.bytes_read) / p.bytes_total);
    double eta = frac > 0 ? t * (1 - frac) / frac : NAN;
    char pct[16];
    std::snprintf(pct, sizeof(pct), "%5.1f%%", 100 * frac);
    if (tty_) {
      const int width = 24;
      int fill = static_cast<int>(frac * width);
      line = "[" + std::string(fill, '=') + (fill < width ? ">" : "") +
             std::string(width - fill - (fill < width ? 1 : 0), ' ') + "] ";
    }
    line += std::string(pct) + " " + Bytes(p.bytes_read) + " / " + Bytes(p.bytes_total) + ", " +
            rates + ", ETA " + Duration(eta);
  } else {
    line = Bytes(p.bytes_read) + " read, " + Count(p.documents) + " docs, " + rates;
  }
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else {
    std::fprintf(stderr, "tokpack build: %s\n", line.c_str());
  }
  std::fflush(stderr);
}

void ProgressPrinter::Finish() {
  if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace tokpack::cli
