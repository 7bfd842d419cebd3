"""Locale codes the service lists (interface §6.8): 154 source codes, 153 target codes.

The client does not refuse other codes (the service may add some); the sandbox does, as the
service would, and :func:`closest` suggests a fix.
"""

from __future__ import annotations

import difflib

_COMMON: frozenset[str] = frozenset(
    """
af-ZA am-ET ar-AE ar-BH ar-DZ ar-EG ar-IQ ar-JO ar-KW ar-LB ar-LY ar-MA ar-OM ar-QA ar-SA
ar-SY ar-TN ar-XA ar-YE az-AZ be-BY bg-BG bho-IN bn-BD bn-IN bs-BA ca-ES cs-CZ cy-GB da-DK
de-AT de-CH de-DE el-GR en-AU en-CA en-GB en-HK en-IE en-IN en-KE en-NG en-NZ en-PH en-SG
en-TZ en-US en-ZA es-AR es-BO es-CL es-CO es-CR es-CU es-DO es-EC es-ES es-GQ es-GT es-HN
es-MX es-NI es-PA es-PE es-PR es-PY es-SV es-US es-UY es-VE et-EE eu-ES fa-IR fi-FI fil-PH
fr-BE fr-CA fr-CH fr-FR ga-IE gl-ES gu-IN he-IL hi-IN hr-HR ht-HT hu-HU hy-AM id-ID is-IS
it-IT ja-JP jv-ID ka-GE kk-KZ km-KH kmr-Arab kmr-Latn kn-IN ko-KR lo-LA lt-LT lv-LV mk-MK
ml-IN mn-MN mr-IN ms-MY mt-MT my-MM nan-CN nb-NO ne-NP nl-BE nl-NL pa-IN pl-PL ps-AF pt-BR
pt-PT ro-RO ru-RU si-LK sk-SK sl-SI so-SO sq-AL sr-Latn-RS sv-SE sw-KE sw-TZ ta-IN te-IN th-TH
tr-TR ug-CN uk-UA ur-IN uz-UZ vi-VN wuu-CN yue-CN zh-CN zh-CN-shandong zh-CN-sichuan zh-HK
zh-TW zu-ZA
""".split()
)

SOURCE: frozenset[str] = _COMMON | {"ar-IL", "ar-PS", "en-GH", "it-CH", "or-IN", "ur-PK"}
TARGET: frozenset[str] = _COMMON | {
    "kmr-Cyrl",
    "zh-CN-guangxi",
    "zh-CN-henan",
    "zh-CN-liaoning",
    "zh-CN-shaanxi",
}
AUTO = "auto"  # media translation may detect the source language


def closest(code: str, allowed: frozenset[str]) -> list[str]:
    """Up to three known codes that look like ``code`` (for error messages)."""
    lowered = {c.lower(): c for c in allowed}
    if code.lower() in lowered:
        return [lowered[code.lower()]]
    return difflib.get_close_matches(code, sorted(allowed), n=3, cutoff=0.5)
