//! Text for the report's charts, set with [`ab_glyph`] on top of plotters' bitmap backend.
//!
//! plotters 0.3.7 draws each glyph of an `ab_glyph` font at its advance position but drops the
//! glyph's left side bearing, so narrow letters drift left and words read "Sci ence" (see
//! `plotters/src/style/font/ab_glyph.rs`, `draw`). [`Typeset`] wraps the bitmap backend and sets
//! text itself: glyphs positioned at their caret (advance and kerning, sub-pixel) with their
//! bearings, anti-aliased by coverage, anchored and rotated as plotters asks. It also records the
//! box of every text it draws, so a test can check that no label falls outside the image.

use std::cell::RefCell;
use std::rc::Rc;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// The box a drawn text covers, in image pixels: `[x0, x1) × [y0, y1)`, and the text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBox {
    /// Left edge.
    pub x0: i32,
    /// Top edge.
    pub y0: i32,
    /// Right edge (exclusive).
    pub x1: i32,
    /// Bottom edge (exclusive).
    pub y1: i32,
    /// What was drawn.
    pub text: String,
}

impl TextBox {
    /// True when the box lies within a `w` × `h` image.
    pub fn inside(&self, w: u32, h: u32) -> bool {
        self.x0 >= 0 && self.y0 >= 0 && self.x1 <= w as i32 && self.y1 <= h as i32
    }
}

/// The width and height in pixels of `text` set in `font` at `size` px (plotters' font size: the
/// height from descent to ascent).
pub fn measure(font: &FontRef<'_>, size: f64, text: &str) -> (u32, u32) {
    let f = font.as_scaled(PxScale::from(size as f32));
    let (w, _) = carets(&f, text);
    (
        w.ceil().max(0.0) as u32,
        (f.ascent() - f.descent()).ceil() as u32,
    )
}

/// Caret x of every glyph and the total advance.
fn carets<F: Font, S: ScaleFont<F>>(f: &S, text: &str) -> (f32, Vec<(ab_glyph::GlyphId, f32)>) {
    let mut x = 0.0f32;
    let mut prev = None;
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = f.glyph_id(c);
        if let Some(p) = prev {
            x += f.kern(p, id);
        }
        out.push((id, x));
        x += f.h_advance(id);
        prev = Some(id);
    }
    (x, out)
}

/// plotters' bitmap backend with text set by [`Typeset`]'s own routine.
pub struct Typeset<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
    boxes: Rc<RefCell<Vec<TextBox>>>,
}

impl<'a> Typeset<'a> {
    /// Wraps `inner`; every text drawn is recorded in `boxes`.
    pub fn new(
        inner: BitMapBackend<'a>,
        font: FontRef<'static>,
        boxes: Rc<RefCell<Vec<TextBox>>>,
    ) -> Typeset<'a> {
        Typeset { inner, font, boxes }
    }
}

type Res<E> = Result<(), DrawingErrorKind<E>>;

impl DrawingBackend for Typeset<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Res<Self::ErrorType> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Res<Self::ErrorType> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res<Self::ErrorType> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Res<Self::ErrorType> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Res<Self::ErrorType> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Res<Self::ErrorType> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Res<Self::ErrorType> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Res<Self::ErrorType> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Res<Self::ErrorType> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        Ok(measure(&self.font, style.size(), text))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Res<Self::ErrorType> {
        let color = style.color();
        let f = self.font.as_scaled(PxScale::from(style.size() as f32));
        let (width, glyphs) = carets(&f, text);
        let height = f.ascent() - f.descent();
        // The anchor, in the text's own (unrotated) frame whose origin is its box's top left.
        let ax = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => width / 2.0,
            HPos::Right => width,
        };
        let ay = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => height / 2.0,
            VPos::Bottom => height,
        };
        let trans = style.transform();
        let place = |x: f32, y: f32| -> (i32, i32) {
            let (dx, dy) = trans.transform((x - ax).round() as i32, (y - ay).round() as i32);
            (pos.0 + dx, pos.1 + dy)
        };
        // The box, recorded whether or not it fits (that is what a test checks).
        let corners = [
            place(0.0, 0.0),
            place(width, 0.0),
            place(0.0, height),
            place(width, height),
        ];
        self.boxes.borrow_mut().push(TextBox {
            x0: corners.iter().map(|c| c.0).min().unwrap_or(0),
            y0: corners.iter().map(|c| c.1).min().unwrap_or(0),
            x1: corners.iter().map(|c| c.0).max().unwrap_or(0),
            y1: corners.iter().map(|c| c.1).max().unwrap_or(0),
            text: text.to_string(),
        });
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (w, h) = self.inner.get_size();
        let baseline = f.ascent();
        let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
        for (id, x) in glyphs {
            let glyph = id.with_scale_and_position(f.scale(), point(x, baseline));
            if let Some(outline) = f.outline_glyph(glyph) {
                let b = outline.px_bounds();
                outline.draw(|gx, gy, coverage| {
                    pixels.push((
                        b.min.x as i32 + gx as i32,
                        b.min.y as i32 + gy as i32,
                        coverage,
                    ));
                });
            }
        }
        for (x, y, coverage) in pixels {
            if coverage <= 0.0 {
                continue;
            }
            let (dx, dy) = trans.transform(x - ax.round() as i32, y - ay.round() as i32);
            let (px, py) = (pos.0 + dx, pos.1 + dy);
            if px >= 0 && py >= 0 && (px as u32) < w && (py as u32) < h {
                self.inner.draw_pixel(
                    (px, py),
                    BackendColor {
                        alpha: color.alpha * f64::from(coverage.min(1.0)),
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn font() -> FontRef<'static> {
        FontRef::try_from_slice(super::super::charts::FONT_BYTES).unwrap()
    }

    /// Columns of `buf` (`w` wide, RGB) with a dark pixel, as runs of blank columns between the
    /// first and the last dark one.
    fn blank_runs(buf: &[u8], w: u32, h: u32) -> Vec<usize> {
        let dark: Vec<bool> = (0..w)
            .map(|x| (0..h).any(|y| buf[((y * w + x) * 3) as usize] < 160))
            .collect();
        let first = dark.iter().position(|d| *d).unwrap();
        let last = dark.iter().rposition(|d| *d).unwrap();
        let mut runs = Vec::new();
        let mut run = 0;
        for d in &dark[first..=last] {
            if *d {
                if run > 0 {
                    runs.push(run);
                }
                run = 0;
            } else {
                run += 1;
            }
        }
        runs
    }

    /// Draws `text` at 14 px (the size of chart labels) into a fresh image with `draw`.
    fn draw_with(text: &str, typeset: bool) -> (Vec<u8>, u32, u32, Vec<TextBox>) {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            super::super::charts::FONT_BYTES,
        );
        let (w, h) = (400u32, 30u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        let boxes = Rc::new(RefCell::new(Vec::new()));
        let style = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
        {
            let bitmap = BitMapBackend::with_buffer(&mut buf, (w, h));
            if typeset {
                let mut b = Typeset::new(bitmap, font(), boxes.clone());
                b.draw_text(text, &style, (10, 5)).unwrap();
                b.present().unwrap();
            } else {
                let mut b = bitmap;
                b.draw_text(text, &style, (10, 5)).unwrap();
                b.present().unwrap();
            }
        }
        let boxes = boxes.borrow().clone();
        (buf, w, h, boxes)
    }

    /// The bug this module exists for: plotters drops each glyph's side bearing, which opens
    /// word-like gaps inside words ("Sci ence"). Set here, the only gap as wide as a space is the
    /// space; plotters' own drawing of the same text has more.
    #[test]
    fn words_have_no_gaps_but_their_spaces() {
        let text = "Natural Science Mathematics";
        let wide = |runs: &[usize]| runs.iter().filter(|r| **r >= 3).count();
        let (buf, w, h, boxes) = draw_with(text, true);
        assert_eq!(
            wide(&blank_runs(&buf, w, h)),
            2,
            "{:?}",
            blank_runs(&buf, w, h)
        );
        let tb = &boxes[0];
        assert!(tb.x0 == 10 && tb.inside(w, h), "{tb:?}");
        let (buf, w, h, _) = draw_with(text, false);
        assert!(
            wide(&blank_runs(&buf, w, h)) > 2,
            "plotters' drawing is fixed upstream?"
        );
    }
}
