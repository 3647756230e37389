# Principal curves of the seismic data with R princurve (Hastie-Stuetzle, batch, default
# smoother): mean squared distance of the points to the fitted curve, seconds per fit (the
# median of 20 fits), the curve's length, and the first principal component line's mean
# squared distance. Run through run-curves.sh.
#
# Usage: Rscript curves.R data/quakes.csv
suppressPackageStartupMessages(library(princurve))
args <- commandArgs(trailingOnly = TRUE)
quakes <- read.csv(args[1])
x <- as.matrix(quakes[, c("long", "lat")])
n <- nrow(x)
fit <- principal_curve(x)
times <- vapply(seq_len(20), function(i) {
  system.time(principal_curve(x))[["elapsed"]]
}, numeric(1))
ordered <- fit$s[fit$ord, , drop = FALSE]
length <- sum(sqrt(rowSums(diff(ordered)^2)))
pc <- prcomp(x)
line_msd <- sum(pc$x[, 2]^2) / n
cat(sprintf("princurve\t%s\t%.4f\t%.4f\t%.2f\t%.4f\n",
            as.character(packageVersion("princurve")), fit$dist / n, median(times),
            length, line_msd))
