// A wide figure on a narrow screen (two or more panels side by side) keeps a width at which its labels
// read, and its frame scrolls sideways (companion.css, .companion-figure-frame); a tap on it opens the
// image at full size. The book draws labels at 10 pt, 13.9 CSS px at a figure's own size (100 dpi,
// book/_scripts/matplotlibrc): 60 % of that size keeps them at 8 px or more, where shrinking a 731 px
// two-panel figure to a 420 px phone's column left them at 7 px, and wider figures' at 4 px.
(function () {
  const READABLE_SHARE = 0.6;
  function frame(img) {
    const own = parseFloat(img.style.width) || parseFloat(img.getAttribute("width")) || 0;
    if (!own) return;
    img.style.setProperty("--companion-readable", Math.round(own * READABLE_SHARE) + "px");
    img.classList.add("companion-readable");
    img.parentElement.classList.add("companion-figure-frame");
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("article a.image-reference > img").forEach(frame);
  });
})();
