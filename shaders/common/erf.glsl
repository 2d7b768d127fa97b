/*
 * erf.glsl — erf(x) in fp32 for the Vulkan shaders (GLSL has no erf; OpenCL C and C do).
 *
 * Two fits made for daybreak: least squares in relative error on 6000 Chebyshev nodes of each
 * range against Python's double math.erf / math.erfc, coefficients rounded to fp32:
 *   |x| < 1:      erf(x) = x * P(x^2), P of degree 5: relative error <= 1.7e-7 (~2 ulp);
 *   1 <= |x| < 4: erf(x) = 1 - exp(-x^2) * Q(|x| - 2.5), Q of degree 11, Q ~ erfc(x) exp(x^2):
 *                 relative error <= 8e-8;
 *   |x| >= 4:     erf(x) = +-1 (erfc(4) = 1.5e-8 is below half an ulp of 1).
 * Measured over [-6, 6] in fp32 (numpy, correctly rounded exp): max abs error 1.1e-7,
 * max relative error 1.65e-7. A GPU's exp may add a few ulp of a value below 0.16 to the
 * second range. NaN propagates (every comparison fails, so the first branch returns NaN).
 */
float dbk_erf(float x) {
    const float a = abs(x);
    if (!(a >= 1.0)) {
        const float u = x * x;
        float p = -5.625396152e-04;
        p = p * u + 4.916023463e-03;
        p = p * u - 2.670994960e-02;
        p = p * u + 1.128013059e-01;
        p = p * u - 3.761231899e-01;
        p = p * u + 1.128379107e+00;
        return x * p;
    }
    if (a >= 4.0) return sign(x);
    const float t = a - 2.5;
    float q = -3.835798736e-07;
    q = q * t + 1.658841825e-06;
    q = q * t - 4.009343229e-06;
    q = q * t + 1.442577741e-05;
    q = q * t - 5.894270726e-05;
    q = q * t + 2.128320484e-04;
    q = q * t - 7.337129791e-04;
    q = q * t + 2.466092817e-03;
    q = q * t - 8.001474664e-03;
    q = q * t + 2.493817359e-02;
    q = q * t - 7.434736192e-02;
    q = q * t + 2.108063549e-01;
    return sign(x) * (1.0 - exp(-a * a) * q);
}
