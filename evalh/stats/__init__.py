"""Statistics as claims (STYLE habit 20): each function names its method, is tested against an independent
implementation (scipy / statsmodels in the test extras) and, where it makes a coverage or error-rate
promise, a seeded simulation shows it. Pure functions over counts and numbers: the standard library and
numpy, nothing of evalh above ``errors``. docs/statistics.md says what each figure means.

* :mod:`evalh.stats.proportions`: one test's pass rate over repeats (Wilson interval, pass@k, pass^k);
* :mod:`evalh.stats.significance`: did it get worse (Fisher's exact test, McNemar's exact test, Holm);
* :mod:`evalh.stats.resampling`: seeded bootstrap intervals (paired differences, clusters);
* :mod:`evalh.stats.means`: a mean with a Student t interval, and the t quantile without scipy;
* :mod:`evalh.stats.repeats`: a test's figures over its repeats, the suite's pass rate with tests as the unit;
* :mod:`evalh.stats.power`: the smallest drop a comparison can tell from noise.
"""
